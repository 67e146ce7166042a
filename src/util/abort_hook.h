/* abort_hook.h — internal: lets src/comm tell the assertion how to stop every rank. */
#ifndef ZEROC_UTIL_ABORT_HOOK_H
#define ZEROC_UTIL_ABORT_HOOK_H
void zc_set_abort_hook(void (*hook)(int code));
#endif
