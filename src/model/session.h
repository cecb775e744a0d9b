/* session.h: a session as the model layer's files see it: a handle on one
 * slot of an engine (session.c, snapshot.c). Not a public header. */
#ifndef Q36_MODEL_SESSION_H
#define Q36_MODEL_SESSION_H

#include "forward.h"

struct q36_session {
    q36_engine *e;
    int         slot;
    bool        owns;      /* q36_session_new: the engine is the session's own */
};

#endif
