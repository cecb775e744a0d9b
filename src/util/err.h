/* err.h: the error value of q36 for the library's own files: the public
 * definition (include/q36_err.h) under the name the modules include. */
#ifndef Q36_ERR_H
#define Q36_ERR_H

#include "../include/q36_err.h"

#endif
