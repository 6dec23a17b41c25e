/* The C span path's view of the hubs (spanpath.c records lane spans
 * through it without entering Go; spanpath.go publishes it). Private to
 * go/capi: callers include gpuspans/hub.h. */
#ifndef GPUSPANS_CAPI_SPANPATH_H_
#define GPUSPANS_CAPI_SPANPATH_H_

#include <stdint.h>

#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"

/* The protocol's values: go/internal/spanring's, checked by spanpath.go. */
#define GS_SP_SLOT_FREE 0ull
#define GS_SP_SLOT_OPENING 1ull
#define GS_SP_SLOT_OPEN 2ull
#define GS_SP_SLOT_CLOSING 3ull
#define GS_SP_SLOT_CLOSED 4ull
#define GS_SP_SLOT_LENT 5ull
#define GS_SP_STATE_MASK 7ull
#define GS_SP_POS_SHIFT 3
#define GS_SP_LENT_NONE 0u
#define GS_SP_LENT_WAITING 1u
#define GS_SP_LENT_LANDED 2u
#define GS_SP_LANE_RESERVING (~0ull)
#define GS_SP_NEXT_SEALED (1ull << 62)
#define GS_SP_STATUS_PENDING 0u
#define GS_SP_STATUS_OPEN 1u
#define GS_SP_STATUS_DEAD 3u
#define GS_SP_STATUS_MASK 3u
#define GS_SP_STATUS_RETIRED 4u
/* gpuspans.SpanKind and DropReason values. */
#define GS_SP_KIND_LANE 1u
#define GS_SP_DROP_SLOT_BUSY 0
#define GS_SP_DROP_CAPTURING 1
#define GS_SP_DROP_RETIRED 2

/* One slot of a recorder's ring: go/internal/spanring.Slot, field for
 * field (spanpath.go checks every offset at compile time). */
typedef struct gs_sp_slot {
  uint64_t word;
  uint64_t stream;
  uint64_t key;
  uint64_t step;
  uint64_t from;
  uint32_t lent;
  uint32_t kind;
  uint8_t pad_[16];
} gs_sp_slot;

/* One installed recorder, as spanring.Recorder gives it: pointers into the
 * hub's Go memory, pinned while the set that holds them may be read. pool
 * is NULL when the recorder's pool is not the core's, or not open when the
 * set was published. */
typedef struct gs_sp_rec {
  uint32_t* status;
  uint64_t* next;
  uint64_t* lane_tok;
  gs_sp_slot* slots;
  uint64_t nslots;
  uintptr_t pool; /* a gs_pool*, 0: none */
  uint64_t stream;
  uint64_t* dropped; /* by gpuspans.DropReason */
  uint64_t* errored;
} gs_sp_rec;

/* What Go published for a hub: its words and its recorders by device. A
 * set is immutable once published and freed only when no C call can hold
 * it (spanpath.go). */
typedef struct gs_sp_set {
  uint64_t id; /* spanpath.go's key, for gs_sp_span_failed */
  uint64_t* step;
  int64_t* open_lanes;
  uint64_t* lane_already_open;
  uint32_t* c_step; /* nonzero: a step may be taken here (spanring.Hub.CStep) */
  uint32_t* state;  /* the hub's level | armed | tracer word, GS_HUB_WORD_* bits */
  int32_t* pools;
  uint64_t* leak_clock;
  uint64_t* armed_steps;
  int64_t* every;
  int32_t nlanes;
  int32_t nrecs;
  gs_sp_rec recs[]; /* nrecs */
} gs_sp_set;

/* Per hub slot: the open hub's handle (0: none or closing, every call goes
 * to Go), the C calls running on it (gs_hub_close and the freeing of a
 * replaced set wait for 0), and its current set (0: none). Go writes
 * handle and set, both sides count active; all accesses are atomic. */
typedef struct gs_sp_hub {
  uint64_t handle;
  int64_t active;
  uintptr_t set;
  uint8_t pad_[40];
} gs_sp_hub;

extern gs_sp_hub gs_sp_hubs[GS_HUB_MAX_HUBS];

/* The ops gs_sp_span_failed names, for the error's text. */
enum { GS_SP_OP_BEGIN = 0, GS_SP_OP_END = 1, GS_SP_OP_NEXT = 2 };

/* Go (spanpath.go): the span at pos of recorder rec of set set_id failed
 * with the core's status and CUresult (not GS_ERR_CAPTURING, which C
 * handles): Go's spanFailed ends it. The caller holds pos's slot and is
 * counted in active. */
void gs_sp_span_failed(uint64_t hub, uint64_t set_id, int32_t rec, uint64_t pos, int32_t op,
                       int32_t status, int32_t cu);

/* Go (spans.go): the span calls' Go paths, for what the C path leaves to
 * Go (no set, a recorder whose pool is not the core's, a lane out of
 * range, a bad handle; a step while c_step is 0). */
gs_hub_status gs_hub_begin_step_go(gs_hub hub);
gs_hub_status gs_hub_lane_begin_go(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_lane_end_go(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_next_lane_go(gs_hub hub, int32_t from, int32_t to);
gs_hub_status gs_hub_next_step_go(gs_hub hub, int32_t last, int32_t first);

#endif /* GPUSPANS_CAPI_SPANPATH_H_ */
