/* bench_traffic.h: bench_traffic.c's entry for the q36 runner, which alone
 * sees both the bench types and q36.h. */
#ifndef Q36_BENCH_TRAFFIC_H
#define Q36_BENCH_TRAFFIC_H

#include "../../src/include/q36.h"
#include "../../src/model/model.h"
#include "bench.h"

int bench_traffic_of(const q36_model *m, int type_k, int type_v, double ctx_positions,
                     bench_traffic *out, q36_err *err);

#endif
