/* spec_guard.h: whether a step of q36 serve --spec-type draft-mtp drafts at
 * all. Drafting pays when a verify row's extra tokens cost the device
 * little; with many slots decoding at once they may cost more than they
 * return (on the H200, 4 slots of the trained model drafting ran at 0.84x
 * of plain decoding, record 2026-12-03-cuda-session18). So the server
 * measures both: for each number of decoding slots, the seconds per
 * generated token of its decode steps (steps without prompt chunks) that
 * drafted and of those that did not, as moving averages, and drafts when
 * drafting has been the faster, trying the other way now and then. The
 * tokens are the same either way (exact verification), only the speed
 * moves. Threads: the engine thread only. */
#ifndef Q36_SPEC_GUARD_H
#define Q36_SPEC_GUARD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct spec_guard spec_guard;

/* For up to n_slots decoding slots; NULL when out of memory. */
spec_guard *spec_guard_new(int n_slots);
void        spec_guard_free(spec_guard *g);              /* accepts NULL */

/* Whether this step, with n_dec slots decoding (>= 1), drafts. */
bool spec_guard_draft(spec_guard *g, int n_dec);
/* The step's outcome: tokens generated in it, its seconds (a decode step:
 * no prompt chunk in it, nor the catch-up of MTP rows that plain steps
 * left: sched.c does not report those). */
void spec_guard_done(spec_guard *g, int n_dec, bool drafted, int tokens, double seconds);
/* Steps it sent without drafts, and with (since the server started). */
void spec_guard_counts(const spec_guard *g, uint64_t *plain, uint64_t *drafted);

/* The policy's constants (spec_guard.c): steps of each way measured
 * before choosing; SPEC_GUARD_RUN steps of the other way every
 * SPEC_GUARD_EXPLORE (the first drafting one catches up the MTP rows the
 * plain steps left, and is not reported). */
enum { SPEC_GUARD_WARM = 8, SPEC_GUARD_EXPLORE = 64, SPEC_GUARD_RUN = 4 };

#endif
