/* A fake libnvidia-ml.so for tests on machines without a GPU. rcuda loads it through
 * RCUDA_NVML_LIBRARY=<path of this library>, exactly as it loads the real one.
 *
 * Readings are set by environment variables, read at every call; GPU i reports base + i
 * (in the unit of the variable) so that tests can tell GPUs apart:
 *   FAKE_NVML_GPUS           number of GPUs                          default 2
 *   FAKE_NVML_TEMPERATURE    degrees C                               default 40
 *   FAKE_NVML_POWER_MW       milliwatts (GPU i: base + 1000 i)       default 100000
 *   FAKE_NVML_MEMORY_TOTAL   bytes (same for every GPU)              default 85899345920 (80 GiB)
 *   FAKE_NVML_MEMORY_USED    bytes (GPU i: base + i MiB)             default 1073741824
 *   FAKE_NVML_UTIL_GPU       percent                                 default 50
 *   FAKE_NVML_UTIL_MEMORY    percent                                 default 20
 *   FAKE_NVML_SM_CLOCK_MHZ   MHz                                     default 1980
 *   FAKE_NVML_MEM_CLOCK_MHZ  MHz                                     default 2619
 *   FAKE_NVML_CLOCK_EVENTS   clocks-event reason mask (same for all) default 0
 *   FAKE_NVML_NO_CLOCK_EVENTS 1: clocks-event reasons not supported  default 0
 *   FAKE_NVML_MIG            1: MIG enabled on every GPU             default 0
 *   FAKE_NVML_NO_POWER       1: power is NVML_ERROR_NOT_SUPPORTED    default 0
 *   FAKE_NVML_INIT_ERROR     nvmlInit_v2 returns this code           default 0 (success)
 *   FAKE_NVML_DELAY_MS       every per-GPU reading sleeps this long  default 0
 * UUIDs are GPU-fa4e0000-0000-0000-0000-00000000000<i> (12 digits at the end). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct FakeDevice* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;

enum { OK = 0, ERR_INVALID_ARGUMENT = 2, ERR_NOT_SUPPORTED = 3, ERR_INSUFFICIENT_SIZE = 7 };

struct FakeDevice {
  unsigned index;
};
static struct FakeDevice devices[64];

static unsigned long long env_or(const char* name, unsigned long long fallback) {
  const char* v = getenv(name);
  return v && *v ? strtoull(v, NULL, 10) : fallback;
}

static unsigned count(void) {
  unsigned long long n = env_or("FAKE_NVML_GPUS", 2);
  return n > 64 ? 64 : (unsigned)n;
}

static void delay(void) {
  unsigned long long ms = env_or("FAKE_NVML_DELAY_MS", 0);
  if (ms) {
    struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
  }
}

nvmlReturn_t nvmlInit_v2(void) { return (nvmlReturn_t)env_or("FAKE_NVML_INIT_ERROR", 0); }
nvmlReturn_t nvmlShutdown(void) { return OK; }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  *n = count();
  return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (i >= count()) return ERR_INVALID_ARGUMENT;
  devices[i].index = i;
  *d = &devices[i];
  return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* buf, unsigned size) {
  char uuid[96];
  snprintf(uuid, sizeof uuid, "GPU-fa4e0000-0000-0000-0000-%012u", d->index);
  if (strlen(uuid) + 1 > size) return ERR_INSUFFICIENT_SIZE;
  strcpy(buf, uuid);
  return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* t) {
  delay();
  if (sensor != 0) return ERR_INVALID_ARGUMENT;
  *t = (unsigned)env_or("FAKE_NVML_TEMPERATURE", 40) + d->index;
  return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
  if (env_or("FAKE_NVML_NO_POWER", 0)) return ERR_NOT_SUPPORTED;
  *mw = (unsigned)env_or("FAKE_NVML_POWER_MW", 100000) + 1000 * d->index;
  return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  m->total = env_or("FAKE_NVML_MEMORY_TOTAL", 85899345920ULL);
  m->used = env_or("FAKE_NVML_MEMORY_USED", 1073741824ULL) + (1ULL << 20) * d->index;
  m->free = m->total > m->used ? m->total - m->used : 0;
  return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  u->gpu = (unsigned)env_or("FAKE_NVML_UTIL_GPU", 50) + d->index;
  u->memory = (unsigned)env_or("FAKE_NVML_UTIL_MEMORY", 20) + d->index;
  return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int clock, unsigned* mhz) {
  if (clock == 1) { /* NVML_CLOCK_SM */
    *mhz = (unsigned)env_or("FAKE_NVML_SM_CLOCK_MHZ", 1980) + d->index;
    return OK;
  }
  if (clock == 2) { /* NVML_CLOCK_MEM */
    *mhz = (unsigned)env_or("FAKE_NVML_MEM_CLOCK_MHZ", 2619) + d->index;
    return OK;
  }
  return ERR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* reasons) {
  (void)d;
  if (env_or("FAKE_NVML_NO_CLOCK_EVENTS", 0)) return ERR_NOT_SUPPORTED;
  *reasons = env_or("FAKE_NVML_CLOCK_EVENTS", 0);
  return OK;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* current, unsigned* pending) {
  (void)d;
  *current = *pending = (unsigned)env_or("FAKE_NVML_MIG", 0);
  return OK;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* buf, unsigned size) {
  const char* v = "999.99.99";
  if (strlen(v) + 1 > size) return ERR_INSUFFICIENT_SIZE;
  strcpy(buf, v);
  return OK;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case OK: return "Success";
    case ERR_INVALID_ARGUMENT: return "Invalid Argument";
    case ERR_NOT_SUPPORTED: return "Not Supported";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
