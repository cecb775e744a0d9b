/* bench_energy.c: the GPU board's energy counter for `q36 bench -ngl`:
 * NVML's total energy since the driver loaded (millijoules), read through
 * libnvidia-ml.so.1 opened with dlopen, so q36 neither links nor needs it;
 * without the library or a device, the counter is absent and the bench
 * prints "n/a". The board is the one Q36_CUDA_DEVICE names (default 0),
 * counted in NVML's order (PCI bus order, which is CUDA's order when
 * CUDA_DEVICE_ORDER=PCI_BUS_ID; on a one-GPU machine they agree). The
 * energy of a timed run is the counter's difference over it: the whole
 * board (memory, idle draw included), whichever engine drives it. */
#include "bench.h"

#include <dlfcn.h>
#include <stdlib.h>

/* NVML's C interface as it is called here: status 0 is success, a device
 * is an opaque handle. */
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned int index, void **device);
typedef int (*nvml_energy_fn)(void *device, unsigned long long *mj);

struct bench_energy {
    void          *lib;
    void          *dev;
    nvml_energy_fn energy;
};

bench_energy *bench_energy_open(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_handle_fn handle = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    nvml_energy_fn energy = (nvml_energy_fn)dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption");
    const char *d = getenv("Q36_CUDA_DEVICE");
    const unsigned idx = d && *d ? (unsigned)atoi(d) : 0;
    void *dev = NULL;
    unsigned long long mj = 0;
    bench_energy *e = NULL;
    if (init && handle && energy && init() == 0 && handle(idx, &dev) == 0 && dev &&
        energy(dev, &mj) == 0 && (e = calloc(1, sizeof *e))) {
        e->lib = lib;
        e->dev = dev;
        e->energy = energy;
        return e;
    }
    dlclose(lib);
    return NULL;
}

double bench_energy_j(const bench_energy *e)
{
    unsigned long long mj = 0;
    if (!e || e->energy(e->dev, &mj) != 0)
        return -1.0;
    return (double)mj / 1000.0;
}

void bench_energy_close(bench_energy *e)
{
    if (!e)
        return;
    /* NVML stays initialized (a process-wide count; libllama's CUDA
     * backend may hold it too): the library is left loaded */
    free(e);
}
