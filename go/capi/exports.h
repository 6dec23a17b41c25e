// The Go side of each export of gpuspans/hub.h that fork.c guards: fork.c
// defines the hub.h name, which calls these unless the process is a fork.
// Declared from exports_list.h, the one list of them; gs_hub_last_error,
// which answers in a child itself, by hand.
#ifndef GPUSPANS_CAPI_EXPORTS_H_
#define GPUSPANS_CAPI_EXPORTS_H_

#include "exports_list.h"
#include "gpuspans/hub.h"

/* gs_capi_forked reports whether this process is a fork of the one that
 * loaded the library, by the fork handler or by the pid (a system call);
 * gs_capi_fork_seen by the handler's flag alone, for the calls made many
 * times a step; gs_capi_refuse records op as the call refused for it and
 * returns GS_HUB_ERR_FORKED. fork.c's. */
int gs_capi_forked(void);
int gs_capi_fork_seen(void);
gs_hub_status gs_capi_refuse(const char* op);

size_t gs_hub_last_error_go(gs_hub hub, char* buf, size_t cap);

#define GS_CAPI_DECLARE_GO(check, refusal, ret, name, go, params, args) ret go params;
GS_CAPI_EXPORTS(GS_CAPI_DECLARE_GO)
#undef GS_CAPI_DECLARE_GO

#endif  // GPUSPANS_CAPI_EXPORTS_H_
