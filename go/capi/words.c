// The hubs' state words live here, in C, so that the inline span functions
// of gpuspans/hub.h read them without calling into Go, and so that Go's
// garbage collector never moves or frees what C reads.
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"

// One cache line per hub: hubs driven from different threads do not share.
static uint32_t words[GS_HUB_MAX_HUBS * GS_HUB_WORD_STRIDE] __attribute__((aligned(64)));

// Callers reach the words through this pointer, not through an exported
// array: an executable linked against the c-shared library gets its own
// copy of any data symbol it reads (a copy relocation), while the library,
// linked -Bsymbolic by Go, keeps writing its original. A copied pointer
// still points at the one array.
uint32_t* const gs_hub_words = words;
