/*
 * gpuspans hub C ABI: the control plane (levels, the span ring, harvests,
 * aggregates, Prometheus, the live page and the control endpoints) for
 * engines written in C, C++, or any language with a C FFI. One header, over
 * 600 lines by design: it is the whole ABI a caller reads, contract and
 * inline fast paths together.
 *
 * The functions are implemented in Go (go/capi) and built into a library
 * that carries the Go runtime:
 *   go build -buildmode=c-archive -o libgpuspans.a ./go/capi   (link with -lstdc++ -lm -ldl -lpthread)
 *   go build -buildmode=c-shared  -o libgpuspans.so ./go/capi
 * or, under Bazel, @com_github_gpuspans_gpuspans//go/capi:hub. Include this
 * header, not the one `go build` writes beside the library: this one holds
 * the documentation, the constants and the inline fast paths.
 *
 * Conventions for every function below:
 * - A hub is a gs_hub, an integer handle; 0 is never a hub. Every exported
 *   function checks its handle: a closed, stale or made-up one returns
 *   GS_HUB_ERR_BAD_HANDLE and touches nothing. Nothing here dereferences a
 *   caller's handle, so no handle can crash the process.
 * - Functions return a gs_hub_status (GS_HUB_OK is 0). The message of a
 *   hub's last failure is gs_hub_last_error(hub, ...); failures with no hub
 *   to blame (gs_hub_create, a bad handle) are gs_hub_last_error(0, ...).
 * - Nothing aborts and no Go panic crosses this ABI, whatever the
 *   arguments (a test calls every function with extreme ones: sizes of
 *   (size_t)-1, INT32_MIN, handles and tokens made up): a panic inside a
 *   call is recovered and returned as GS_HUB_ERR_INTERNAL with its message.
 *   Pointers must be NULL or valid for what the function says it writes.
 * - Strings passed in are NUL-terminated UTF-8, read during the call only.
 * - Thread safety: every function may be called from any thread, at once,
 *   gs_hub_close included: close waits for the calls already running on
 *   the hub (gs_hub_drain returns early for a closing hub), stops any
 *   server a racing gs_hub_serve started, and calls that begin after it
 *   return GS_HUB_ERR_BAD_HANDLE. Handles carry a generation, so a closed
 *   hub's handle never names the hub that reuses its slot.
 * - Cost: the span calls (gs_hub_begin_step, gs_hub_lane_begin/_end,
 *   gs_hub_next_lane/_step, gs_hub_kernel_begin/_end) are static inline
 *   functions that read the hub's state word (a relaxed load) and make a
 *   call only when the hub has work: at level Off (with no pool open) and
 *   on steps not armed for kernel spans they make no call at all. When they
 *   do call, it is one call. The step and lane calls run in C (the library's
 *   span path): on a CUDA device they record through the CUDA core without
 *   entering Go, and the step does too while a background harvester runs
 *   with kernel timing events; everything else calls into Go, about 0.1 us
 *   from a C thread in a tight loop and 0.4 to 3 us from a thread busy with
 *   other work. GPUSPANS_SPAN_PATH=go in the environment (read with getenv
 *   at the first gs_hub_create) sends every call into Go; any other value
 *   than c or go makes gs_hub_create fail, naming it.
 * - Signals: the Go runtime in the library installs no handler for SIGINT,
 *   SIGTERM or SIGQUIT (nothing here calls os/signal), so the host keeps its
 *   own handling of Ctrl-C. It does handle SIGSEGV, SIGBUS, SIGFPE inside
 *   Go code, and uses SIGURG (preemption); see Go's os/signal documentation
 *   on c-archive and c-shared.
 * - Fork: the Go runtime inside the library does not survive fork (only
 *   the forking thread is copied: the harvester, the server, the OTLP
 *   exporter and the runtime's own threads are not, and a lock one of them
 *   held stays held), so in a process forked after the library was loaded
 *   no call enters Go. There the inline span calls make no call (the fork
 *   clears every state word; a fork that runs no atfork handler, as the
 *   fork system call itself or clone, is seen by the pid at the first step
 *   or other export, which then refuses and clears them), and every
 *   function returns at once, having done nothing: GS_HUB_ERR_FORKED (gs_hub_kernel_begin_call: token 0;
 *   gs_hub_last_error: the reason, naming the call and both pids),
 *   gs_hub_close included, without waiting for a harvester that is gone;
 *   the hub's memory stays until the child exits or execs. The parent's
 *   hubs are untouched. A child that needs telemetry execs, or makes its
 *   hubs in a process that has not loaded the library.
 */
#ifndef GPUSPANS_HUB_H_
#define GPUSPANS_HUB_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h> /* memset, for the _init functions */

#ifdef __cplusplus
extern "C" {
#endif

/* Status of a call. Values are stable: they are part of the ABI. */
typedef enum gs_hub_status {
  GS_HUB_OK = 0,
  GS_HUB_ERR_BAD_HANDLE = 1,       /* not an open hub (closed, stale, or never one) */
  GS_HUB_ERR_INVALID_ARGUMENT = 2, /* an argument out of range, a bad name, NULL where not allowed */
  GS_HUB_ERR_TOO_SMALL = 3,        /* the caller's buffer is too small; *len says what is needed */
  GS_HUB_ERR_LISTEN = 4,           /* the HTTP address cannot be served (in use, or refused by the token rules) */
  GS_HUB_ERR_LIMIT = 5,            /* GS_HUB_MAX_HUBS hubs are open already */
  GS_HUB_ERR_INTERNAL = 6,         /* a bug: a panic was recovered; the message says where */
  GS_HUB_ERR_FORKED = 7            /* the process is a fork of the one that loaded the library: see Fork */
} gs_hub_status;

/* A hub handle. */
typedef uint64_t gs_hub;

/* Levels, as go/gpuspans: each records everything the one below does. */
enum {
  GS_HUB_LEVEL_OFF = 0,    /* nothing recorded; span calls make no call into Go */
  GS_HUB_LEVEL_STEP = 1,   /* steps counted on the host; nothing touches the GPU */
  GS_HUB_LEVEL_KERNEL = 2  /* lane spans every step, kernel spans on 1 step in kernel_span_every */
};

/* When harvests place spans on the host clock (gs_hub_span.start_ns), as
 * go/gpuspans.StartTimes. Values are part of the ABI. */
enum {
  GS_HUB_START_TIMES_AUTO = 0,  /* while a reader of start times is attached (gs_hub_recent_spans,
                                   gs_hub_keep_start_times) */
  GS_HUB_START_TIMES_NEVER = 1, /* never: start_ns is always 0, and harvests skip that driver call */
  GS_HUB_START_TIMES_ALWAYS = 2 /* every span */
};

/* Formats of gs_hub_snapshot. */
enum {
  GS_HUB_SNAPSHOT_JSON = 0, /* the live page's JSON (/debug/gpuspans/snapshot.json): UTF-8 text */
  GS_HUB_SNAPSHOT_PROTO = 1 /* gpuspans.v1.Snapshot (proto/gpuspans/v1/spans.proto), binary */
};

/* Flags of gs_hub_serve. */
enum {
  GS_HUB_SERVE_PROTECT_READS = 1 /* /metrics and the live page require the token too */
};

/* Flags of gs_hub_set_metrics. */
enum {
  GS_HUB_METRICS_KERNEL_HISTOGRAMS = 1 /* a latency histogram per device and kernel with spans, beside the lanes' */
};

/* How many hubs a process may hold open at once. */
#define GS_HUB_MAX_HUBS 64

/* Options of gs_hub_create, as go/gpuspans.Options: each zero means that
 * field's default. Start from gs_hub_options_init(), which sets size and
 * zeroes the rest. size is what lets the struct grow: fields are only ever
 * added at the end, and a library reads a struct of any size a hub.h has
 * given it, the fields that caller's header lacked at their defaults. A
 * size of 0, one larger than the library knows (a caller built against a
 * newer header) or one no hub.h ever gave is refused, naming the struct,
 * never read in part or ignored. */
typedef struct gs_hub_options {
  uint32_t size;             /* sizeof(gs_hub_options) as the caller compiled it */
  int32_t num_lanes;         /* entries in lanes, 1..64 when lanes is set */
  const char* const* lanes;  /* lane names (lane i is lanes[i]); NULL: "prefill", "decode" */
  int32_t level;             /* initial level: GS_HUB_LEVEL_* */
  int32_t kernel_span_every; /* arm kernel spans on 1 step in this many (0: 16) */
  int32_t slots;             /* span ring slots per device (0: 4096) */
  int32_t recent_spans;      /* ring of recent spans (0: 8192) */
  int32_t start_times;       /* GS_HUB_START_TIMES_*: when spans are placed on the host clock */
  int32_t raw_kernel_spans;  /* nonzero: do not subtract the event offset from kernel spans */
  int32_t quiet;             /* nonzero: do not log the rare events (pool failures, sticky errors) to stderr
                                (gs_hub_set_log_callback sends them elsewhere) */
  int32_t kernel_timing;     /* GS_HUB_KERNEL_TIMING_*: where kernel spans come from (0: events); as
                                gs_hub_set_kernel_timing right after create (AUTO or CUPTI take CUPTI
                                over from the subscriber a finished profiler left) */
  int64_t kernel_window_every_ns; /* period of kernel windows (0: 10 s; 1 ms..24 h) */
  int32_t kernel_window_steps;    /* steps each kernel window collects (0: 1; at most 1024) */
  int32_t kernel_labels;          /* traced kernel names with a label of their own (0: 32; at most 1024) */
  int32_t max_requests;   /* requests held at once for whose GPU time (gs_hub_serve_requests): in flight,
                             or ended with spans still to land (0: 4096; at most 65536) */
  int32_t request_labels; /* request classes with labels of their own on /metrics (0: 8; at most 1024) */
  double peak_flops;      /* each device's peak FLOP/s, for utilisation (0: its model's dense BF16 figure
                             where known; at most 1e18) */
  double peak_bandwidth;  /* each device's peak memory bytes/s (0: its model's where known; at most 1e15) */
} gs_hub_options;

/* Where kernel spans come from (docs/design.md, kernel spans). Values are
 * part of the ABI. */
typedef enum gs_hub_kernel_timing {
  GS_HUB_KERNEL_TIMING_EVENTS = 0,  /* event pairs around gs_hub_kernel_begin/_end (the default) */
  GS_HUB_KERNEL_TIMING_AUTO = 1,    /* every kernel of kernel windows from CUPTI, graph replays
                                       included, where CUPTI loads; else event pairs */
  GS_HUB_KERNEL_TIMING_CUPTI = 2,   /* as AUTO; falling back is logged as a failure */
  GS_HUB_KERNEL_TIMING_ATTACHED = 3 /* every kernel of armed steps from a CUPTI that stays attached,
                                       for engines that launch from several threads (costly) */
} gs_hub_kernel_timing;

/* Kinds of gs_hub_span. Values are part of the ABI. */
enum {
  GS_HUB_SPAN_LANE = 1,  /* the work of one lane in one step */
  GS_HUB_SPAN_KERNEL = 2 /* one kernel launch */
};

/* Bytes of gs_hub_span's name: a name (at most 128 bytes) and its NUL. */
#define GS_HUB_SPAN_NAME_CAP 136

/* Levels of log lines, numbered as Python's logging numbers them. Values
 * are part of the ABI. */
enum {
  GS_HUB_LOG_INFO = 20,    /* changes made through the control endpoints */
  GS_HUB_LOG_WARNING = 30  /* the rare events: pool failures, sticky errors, fallbacks, dropped lines */
};

/* A log callback (gs_hub_set_log_callback): line is len bytes of UTF-8
 * and a NUL, without a trailing newline, valid during the call only. */
typedef void (*gs_hub_log_fn)(gs_hub hub, int32_t level, const char* line, size_t len, void* user);

/* A landed span, as gs_hub_recent_spans writes it (192 bytes). */
typedef struct gs_hub_span {
  uint64_t seq;         /* landing order on the hub, from 1 */
  uint64_t step;        /* the step counter when the span began */
  uint64_t stream;      /* the stream it ran on (the tracer's stream id for traced kernels) */
  int64_t start_ns;     /* begin on the host clock (Unix ns); 0 when not placed (see gs_hub_keep_start_times) */
  int64_t duration_ns;  /* GPU time */
  int32_t kind;         /* GS_HUB_SPAN_* */
  int32_t device;       /* the device's ordinal */
  uint32_t graph;       /* the CUDA graph a traced kernel was replayed from; 0 for others */
  uint32_t name_len;    /* bytes of name before its NUL */
  char name[GS_HUB_SPAN_NAME_CAP]; /* lane or kernel name ("other": a kernel never registered), NUL-terminated */
} gs_hub_span;

/* Options of gs_hub_otlp_start. Start from gs_hub_otlp_options_init() (size
 * set, every other field zero; size works as in gs_hub_options). The
 * standard OpenTelemetry variables (OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES, as the process had them when the library
 * loaded) then set what the fields leave unset, as go/export/otlp
 * documents. */
typedef struct gs_hub_otlp_options {
  uint32_t size;            /* sizeof(gs_hub_otlp_options) as the caller compiled it */
  const char* endpoint;     /* the collector: "http://host:4318" for OTLP/HTTP (traces to /v1/traces,
                               or to the path given), "http://host:4317" for gRPC, https:// for TLS;
                               NULL or "": OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, required then */
  const char* service_name; /* the resource's service.name; NULL or "": OTEL_SERVICE_NAME, else
                               service.name in OTEL_RESOURCE_ATTRIBUTES, else "gpuspans" */
  int32_t sample_every;     /* export the spans of steps whose number is a multiple of this (0: 16) */
  int32_t no_kernel_spans;  /* nonzero: lane spans only */
  int32_t poll_every_ms;    /* how often the exporter reads the hub's recent spans (0: 200) */
  int32_t max_links;        /* request links per step, at most 1024 (0: 64) */
  const char* protocol;     /* "grpc" or "http/protobuf"; NULL or "":
                               OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, else "http/protobuf" */
} gs_hub_otlp_options;

/* A request a step serves, as gs_hub_link_step takes it: the W3C trace
 * context ids of the request's span (OpenTelemetry's trace_id and
 * span_id), big-endian bytes as in a traceparent header. */
typedef struct gs_hub_link {
  uint8_t trace_id[16];
  uint8_t span_id[8];
} gs_hub_link;

/* A request one lane span served, as gs_hub_serve_requests takes it (48
 * bytes; go/gpuspans.RequestWork, whose layout it is). */
typedef struct gs_hub_request {
  uint64_t id;              /* the engine's request id: not 0, unique among the requests in flight */
  uint32_t new_tokens;      /* prompt (prefill) tokens the span processed for it */
  uint32_t decoded_tokens;  /* tokens it decoded; new_tokens + decoded_tokens: 1..16777216 */
  uint32_t context;         /* its context after the span: the tokens its tokens attend to, these
                               included (0: as many as they; at most 2^30) */
  uint16_t request_class;   /* its model, adapter and tenant (gs_hub_request_class); 0: none.
                               Fixed, like the span context, by its first span */
  uint8_t trace_id[16];     /* its request span's context (all zero: none), as gs_hub_link takes
                               it: its GPU time goes out as a span under that span */
  uint8_t span_id[8];
} gs_hub_request;

/* The state word of each hub slot, written by the hub (atomic stores) and
 * read by the inline functions below: bits 0-1 the level, GS_HUB_WORD_ARMED
 * on a step armed for kernel spans, GS_HUB_WORD_POOLS while a pool is open
 * (steps then harvest, and lane spans may be open, at any level). A hub's
 * word is gs_hub_words[(hub % GS_HUB_MAX_HUBS) * GS_HUB_WORD_STRIDE], in an
 * array in the library's C data (not Go's heap), one cache line per hub; a
 * slot with no open hub holds 0. gs_hub_words is a pointer, not the array,
 * so that executables linked against the shared library (which get copies
 * of the data symbols they read) still read the library's words. Read a
 * word only through gs_hub_word. */
#define GS_HUB_WORD_LEVEL 0x3u
#define GS_HUB_WORD_ARMED 0x4u
#define GS_HUB_WORD_POOLS 0x8u
#define GS_HUB_WORD_TRACER 0x10u /* the kernel tracer is open: gs_hub_begin_step must call in */
#define GS_HUB_WORD_STRIDE 16
extern uint32_t* const gs_hub_words;

/* What a state word lets the span calls skip, said once: the inline calls
 * below, the C span path (go/capi's spanpath.c) and Python's compiled calls
 * test these, and Python's fallback tests the same bits (_lib.py's
 * step_has_work, lanes_begin, lanes_end). */
/* gs_hub_word_step_has_work: a step begin calls in: a level above Off
 * (count the step), a pool open (harvest) or the kernel tracer open. */
static inline int gs_hub_word_step_has_work(uint32_t w) {
  return (w & (GS_HUB_WORD_LEVEL | GS_HUB_WORD_POOLS | GS_HUB_WORD_TRACER)) != 0;
}
/* gs_hub_word_lanes_begin: lane spans begin (level Kernel). */
static inline int gs_hub_word_lanes_begin(uint32_t w) {
  return (w & GS_HUB_WORD_LEVEL) == GS_HUB_LEVEL_KERNEL;
}
/* gs_hub_word_lanes_end: a lane span may be open to end: level Kernel, or a
 * pool still open below it. */
static inline int gs_hub_word_lanes_end(uint32_t w) {
  return gs_hub_word_lanes_begin(w) || (w & GS_HUB_WORD_POOLS) != 0;
}
/* gs_hub_word_armed: kernel spans begin (a step armed for them). */
static inline int gs_hub_word_armed(uint32_t w) { return (w & GS_HUB_WORD_ARMED) != 0; }

#ifndef GS_HUB_TYPES_ONLY /* go/capi's own cgo preamble stops here */

/* gs_hub_options_init returns options with size set to this header's
 * sizeof(gs_hub_options) and every other field zero: all defaults. */
static inline gs_hub_options gs_hub_options_init(void) {
  gs_hub_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  return o;
}

/* gs_hub_otlp_options_init is gs_hub_options_init for gs_hub_otlp_options. */
static inline gs_hub_otlp_options gs_hub_otlp_options_init(void) {
  gs_hub_otlp_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  return o;
}

/* gs_hub_word returns hub's state word: a relaxed load (after the load of
 * the constant gs_hub_words), no call, in bounds for any handle (a bad one
 * reads some slot's word, maybe 0). */
static inline uint32_t gs_hub_word(gs_hub hub) {
  return __atomic_load_n(&gs_hub_words[(hub % GS_HUB_MAX_HUBS) * GS_HUB_WORD_STRIDE],
                         __ATOMIC_RELAXED);
}

/* gs_hub_status_name returns a static string naming st ("GS_HUB_ERR_BAD_HANDLE").
 * Thread-safe, never NULL. */
const char* gs_hub_status_name(int32_t st);

/* gs_hub_last_error copies the message of hub's last failure (hub 0: the
 * last failure with no hub to blame) into buf, NUL-terminated and truncated
 * to cap bytes when cap > 0, and returns its full length (0: none). It
 * writes at most the message and its NUL, whatever cap says. A message
 * stays until the next failure replaces it, and is at most 2048 bytes (a
 * long argument it quotes is cut). A bad handle reads hub 0's message.
 * Thread-safe. */
size_t gs_hub_last_error(gs_hub hub, char* buf, size_t cap);

/* gs_hub_create makes a hub configured by *opts (NULL: all defaults) and
 * stores its handle in *out. It touches no GPU. GS_HUB_ERR_INVALID_ARGUMENT
 * names the bad option as gs_hub_options spells it (a bad lane name, a
 * duplicate lane, a negative kernel_span_every, a level out of range, a
 * size of 0 or past this library's struct); GS_HUB_ERR_LIMIT when
 * GS_HUB_MAX_HUBS hubs are open. Thread-safe. */
gs_hub_status gs_hub_create(const gs_hub_options* opts, gs_hub* out);

/* gs_hub_close stops serving, waits for the calls running on the hub on
 * other threads to return (a gs_hub_otlp_stop among them stops sending at
 * once, what it had not sent counted as dropped), closes the kernel tracer
 * (on the stepping thread a window detaches CUPTI; on another it is
 * abandoned, attached), sets the level to Off, uninstalls every device,
 * lands the spans still in flight for up to 1 s (so their pools close),
 * gives the log callback up to 1 s, and frees the handle; later calls with it return GS_HUB_ERR_BAD_HANDLE, and
 * nothing of the hub (server, writes to its state word) outlives the
 * call. Thread-safe; closing twice returns GS_HUB_ERR_BAD_HANDLE. */
gs_hub_status gs_hub_close(gs_hub hub);

/* gs_hub_install_cuda attaches CUDA device `device` (an ordinal, 0..63)
 * with lane spans recorded on `stream` (a CUstream as an integer, the value
 * of torch.cuda.Stream.cuda_stream; 0 is the legacy default stream). Its
 * event pool opens at the first step at level Kernel, on the device's
 * primary context: a missing driver shows then, as the device's failed
 * state in snapshots, not as an error here. Replaces the device's previous
 * installation (its spans still land). Thread-safe. */
gs_hub_status gs_hub_install_cuda(gs_hub hub, int32_t device, uint64_t stream);

/* gs_hub_install_sim attaches a simulated GPU as device `device`, lane
 * spans on `stream` (any integer names a stream), for tests and demos
 * without a GPU: work queued with gs_hub_sim_launch runs on the host clock,
 * and every span reads event_offset_ns longer than its work (as a real
 * GPU's event pairs do; 0 for none). Replaces any earlier installation of
 * the device, simulated or not. Thread-safe. */
gs_hub_status gs_hub_install_sim(gs_hub hub, int32_t device, uint64_t stream,
                                 int64_t event_offset_ns);

/* gs_hub_sim_launch queues duration_ns of simulated work on `stream` of the
 * simulated device `device`: it starts when the stream is free and runs on
 * the host clock. GS_HUB_ERR_INVALID_ARGUMENT when the device is not
 * simulated or the duration is negative. Thread-safe. */
gs_hub_status gs_hub_sim_launch(gs_hub hub, int32_t device, uint64_t stream, int64_t duration_ns);

/* gs_hub_uninstall detaches device's recorder (its spans still land). A
 * device with nothing installed is left alone. Thread-safe. */
gs_hub_status gs_hub_uninstall(gs_hub hub, int32_t device);

/* gs_hub_register_kernel names a kernel handle (a CUfunction as an
 * integer, or any id of your choosing) so its spans aggregate under name;
 * spans of handles never registered aggregate as "other". At most 1024
 * handles and names; names are short printable UTF-8. Thread-safe. */
gs_hub_status gs_hub_register_kernel(gs_hub hub, uint64_t kernel, const char* name);

/* gs_hub_lane_index stores in *lane the index of the lane called name,
 * for gs_hub_lane_begin and _end. GS_HUB_ERR_INVALID_ARGUMENT names an
 * unknown lane. Thread-safe. */
gs_hub_status gs_hub_lane_index(gs_hub hub, const char* name, int32_t* lane);

/* gs_hub_set_kernel_timing chooses where kernel spans come from, from the
 * next step on (GS_HUB_KERNEL_TIMING_*; gs_hub_options.kernel_timing sets
 * it at create). With AUTO or CUPTI, CUPTI is
 * attached only during kernel windows (gs_hub_set_kernel_windows: one step
 * every 10 s by default), each opened and closed inside gs_hub_begin_step
 * on its caller's thread, which must be the thread that launches the
 * engine's kernels: a window's detach races launches from other threads
 * (docs/design.md, kernel windows). During a window gs_hub_kernel_begin
 * opens no event pair (CUPTI sees the kernel); between windows kernel spans
 * come from nowhere, unless CUPTI cannot be used, where they come from
 * event pairs as with EVENTS (the reason in the log and the snapshot).
 * ATTACHED keeps CUPTI attached and collecting on armed steps, for engines
 * that launch from several threads: every launch of the process then
 * costs about 1 us more, and no window opens in the process afterwards.
 * EVENTS, or a level below Kernel, closes the tracer at the next
 * gs_hub_begin_step, so that a profiler (torch.profiler, Nsight) may take
 * CUPTI. gs_hub_get_kernel_timing reads the choice and whether spans come
 * from CUPTI now (tracing 1; 0 before the first step at Kernel or after a
 * fallback). Either pointer may be NULL. Thread-safe; no CUPTI call. */
gs_hub_status gs_hub_set_kernel_timing(gs_hub hub, int32_t timing);
gs_hub_status gs_hub_get_kernel_timing(gs_hub hub, int32_t* timing, int32_t* tracing);

/* Other threads' CUDA graph replays beside kernel windows. A window's
 * detach while another thread replays a graph lost the whole process's
 * CUDA context on an H200 (error 719 on every thread, for good). So a
 * window watches which threads launch (CUPTI's API records), and one in
 * which another thread replayed a graph outside the launch guard is not
 * detached: CUPTI stays attached for the rest of the process (every launch
 * pays about 1 us), windows are off, and the log, the snapshot and
 * gpuspans_kernel_windows_left_attached_total say so, naming the thread. A
 * thread that replays only between windows is not seen, so an engine
 * whose other threads launch graphs passes each of those launches through
 * the guard: gs_launch_guard_enter before, gs_launch_guard_exit after, on
 * that thread. A window's attach and detach then hold guarded launches
 * off (a few milliseconds, once a window period) and wait for those in
 * flight, and its watch counts them as guarded. Enter and exit cost a few
 * atomic operations; never hold the guard across a gs_hub_begin_step. An
 * exit without its enter on the same thread is refused, counted and
 * logged; while a thread stays inside the guard past a window's wait (20
 * ms), windows skip without waiting, and the snapshot's launch guard names
 * the thread and for how long.
 * Implemented in the CUDA core (gpuspans/tracer.h), with no call into Go;
 * thread-safe. */
void gs_launch_guard_enter(void);
void gs_launch_guard_exit(void);
/* gs_launch_guard_depth is how many enters of the calling thread await
 * their exit (gpuspans/tracer.h). */
int32_t gs_launch_guard_depth(void);

/* gs_hub_set_kernel_windows sets the period of kernel windows in ns
 * (1 ms..24 h; 0: 10 s) and the consecutive steps each collects (1..1024;
 * 0: 1), from the next window on (gs_hub_options sets both at create).
 * GS_HUB_ERR_INVALID_ARGUMENT names a value out of bounds, and changes
 * nothing. Thread-safe. */
gs_hub_status gs_hub_set_kernel_windows(gs_hub hub, int64_t every_ns, int32_t steps);

/* gs_hub_request_kernel_window asks for a kernel window at the next
 * gs_hub_begin_step at level Kernel, whatever the period (a window open
 * then answers it). GS_HUB_ERR_INVALID_ARGUMENT says why none can open:
 * kernel timing is not AUTO or CUPTI, or CUPTI fell back for good.
 * Thread-safe; no CUPTI call. */
gs_hub_status gs_hub_request_kernel_window(gs_hub hub);

/* gs_hub_set_level sets the level (GS_HUB_LEVEL_*); lowering below Kernel
 * disarms kernel spans at once, raising to Kernel arms from the next step.
 * gs_hub_get_level reads it. Thread-safe. */
gs_hub_status gs_hub_set_level(gs_hub hub, int32_t level);
gs_hub_status gs_hub_get_level(gs_hub hub, int32_t* level);

/* gs_hub_set_kernel_span_every arms kernel spans on 1 step in n (n >= 1)
 * from the next step on. Thread-safe. */
gs_hub_status gs_hub_set_kernel_span_every(gs_hub hub, int32_t n);

/* gs_hub_harvest lands every finished span now, without waiting for the
 * GPU (steps do this; call it only to land spans between steps).
 * gs_hub_drain harvests until no span is in flight or timeout_ms passed,
 * sleeping 1 ms between harvests, and stores in *in_flight (may be NULL)
 * what is still in flight: for the end of a run, or tests. It returns early
 * when gs_hub_close begins on another thread (close lands what it can
 * itself). Thread-safe. */
gs_hub_status gs_hub_harvest(gs_hub hub);
gs_hub_status gs_hub_drain(gs_hub hub, int32_t timeout_ms, uint64_t* in_flight);

/* gs_hub_start_harvester harvests every interval_us microseconds
 * (1..1000000) on a thread of the library's, so that gs_hub_begin_step
 * only counts and arms the step: no driver call on the engine's thread
 * (the Go API's Hub.RunHarvester, with its guarantees: it never waits for
 * the GPU, and a tick that finds a harvest running is skipped). It also
 * opens the pools of devices installed at level Kernel, and the kernel
 * tracer, at its next tick rather than at the next step. GS_HUB_ERR_LIMIT
 * when one runs already. gs_hub_stop_harvester stops it and waits for its
 * last tick (GS_HUB_OK when none runs); gs_hub_close stops it too.
 * Thread-safe. */
gs_hub_status gs_hub_start_harvester(gs_hub hub, int64_t interval_us);
gs_hub_status gs_hub_stop_harvester(gs_hub hub);

/* gs_hub_start_profile keeps this build's GPU profile in the file at path
 * (the Go API's Hub.StartProfile; docs/design.md, profiles across builds).
 * Before it returns it reads the profile there: one it cannot use is
 * ignored, logged, and said in the snapshot's "profile"; a file that is not
 * a profile is never replaced. Then, on a thread of the library's, it
 * compares the hub's kernel windows with another build's profile lane by
 * lane, once both have 5 windows of a lane (a log line a lane, the
 * snapshot's "profile", the live page, /metrics), and writes this build's
 * every every_ms milliseconds (0: a minute; less than 1000: a second) once
 * a window was added, and at gs_hub_stop_profile or gs_hub_close. build is
 * the engine's build identity (its version, an image digest).
 * GS_HUB_ERR_INVALID_ARGUMENT for a NULL or empty path or build, a build
 * over 512 bytes or with control characters, a negative every_ms;
 * GS_HUB_ERR_LIMIT when one is kept already. gs_hub_stop_profile writes the
 * profile, stops and waits (GS_HUB_OK when none is kept). Thread-safe. */
gs_hub_status gs_hub_start_profile(gs_hub hub, const char* path, const char* build, int64_t every_ms);
gs_hub_status gs_hub_stop_profile(gs_hub hub);

/* gs_hub_snapshot writes a snapshot of hub (aggregates with histograms,
 * counters, device states) in `format` (GS_HUB_SNAPSHOT_*) into buf and its
 * length in bytes into *len. JSON is NUL-terminated (not counted in *len).
 * When cap is too small (buf may then be NULL) it returns
 * GS_HUB_ERR_TOO_SMALL with the size needed in *len (plus 1 for JSON's NUL)
 * and writes nothing; a snapshot taken later may be larger, so allocate
 * with room to spare, or loop. Thread-safe. */
gs_hub_status gs_hub_snapshot(gs_hub hub, int32_t format, void* buf, size_t cap, size_t* len);

/* gs_hub_serve serves hub's HTTP surface on addr ("127.0.0.1:9464"; port 0
 * picks one): /metrics (Prometheus), the live page /debug/gpuspans and its
 * JSON, and the control endpoints /control/level and
 * /control/kernel_span_every, exactly as the Go demo does. The token rules
 * are the Go API's (go/gpuspanshttp/control): a non-loopback address needs a token,
 * which is then required on the control endpoints (and, with
 * GS_HUB_SERVE_PROTECT_READS, on every path); a blank token or one with
 * white space is refused. token is a C string, so it ends at its first NUL:
 * a token holding one cannot be passed (Python refuses it by name); check
 * the length of what you pass. token may be NULL or "" for none;
 * GS_HUB_SERVE_PROTECT_READS without one is GS_HUB_ERR_INVALID_ARGUMENT.
 * Without a token the control endpoints refuse cross-site requests (a
 * browser's, through DNS rebinding or a form on another site): see
 * go/gpuspanshttp/control's package documentation. The bound address ("127.0.0.1:41234")
 * is written to bound (NUL-terminated; bound may be NULL, or bound_cap 0);
 * a bound_cap too small for it is GS_HUB_ERR_TOO_SMALL, and nothing is
 * served. GS_HUB_ERR_LISTEN names the address and why;
 * GS_HUB_ERR_INVALID_ARGUMENT when the hub serves already. The server runs
 * on Go's threads until gs_hub_stop_serving or gs_hub_close. Thread-safe. */
gs_hub_status gs_hub_serve(gs_hub hub, const char* addr, const char* token, int32_t flags,
                           char* bound, size_t bound_cap);
gs_hub_status gs_hub_stop_serving(gs_hub hub);

/* gs_hub_metrics writes hub's Prometheus families (gpuspans_*: the lane and
 * kernel histograms, span counters, levels, device info) in the Prometheus
 * text format 0.0.4, as gs_hub_serve's /metrics has them but without the Go
 * runtime's and the process's families, for a host that serves /metrics
 * itself (Python's gpuspans.prometheus.Collector reads this). The text
 * format has no native histograms: histograms carry their classic buckets
 * (go/export/prom's package documentation has the layouts). Buffers as
 * gs_hub_snapshot's JSON: NUL-terminated, *len without the NUL;
 * GS_HUB_ERR_TOO_SMALL with the size needed (NUL included) when cap is too
 * small. Takes the harvest lock briefly; allocates. Thread-safe. */
gs_hub_status gs_hub_metrics(gs_hub hub, char* buf, size_t cap, size_t* len);

/* gs_hub_set_metrics sets which series hub's Prometheus families hold (the
 * series budget: docs/operations.md, go/export/prom). flags
 * are GS_HUB_METRICS_*; by default only lane histograms, 1 series each
 * where Prometheus scrapes native histograms and 28 where it stores classic
 * buckets, and GS_HUB_METRICS_KERNEL_HISTOGRAMS costs as much again per
 * kernel. classic_buckets is the classic buckets per doubling of duration:
 * 0 or 1 (the default: 25 from 1 us to 16 s, histogram_quantile within a
 * factor of 2 of the truth), 2, 4 or 8 (193, within 9%). gs_hub_metrics
 * follows from its next call, gs_hub_serve from its next start (a server
 * running keeps what it started with). GS_HUB_ERR_INVALID_ARGUMENT names an
 * unknown flag or bucket count, and changes nothing. Thread-safe. */
gs_hub_status gs_hub_set_metrics(gs_hub hub, int32_t flags, int32_t classic_buckets);

/* gs_hub_set_metric_labels puts n constant labels, names[i]=values[i], on
 * every series of hub's Prometheus families (and the OTLP exporter's), as
 * an engine labels all its metrics with its model: gs_hub_metrics from its
 * next call, gs_hub_serve from its next start. n = 0 removes them. At most
 * 16; a name is a Prometheus label name not beginning with "__" and not one
 * of the families' own (device, lane, kernel, quantile, le, reason, ...)
 * nor job or instance, of at most 128 bytes; a value non-empty UTF-8 of at
 * most 1,024 bytes.
 * GS_HUB_ERR_INVALID_ARGUMENT names what is wrong, and changes nothing.
 * They add no series. Thread-safe. */
gs_hub_status gs_hub_set_metric_labels(gs_hub hub, const char* const* names, const char* const* values, size_t n);

/* gs_hub_recent_spans writes to out, oldest first, up to cap of the spans
 * still in the hub's ring of recent spans (gs_hub_options.recent_spans)
 * whose seq is above after_seq, and their number to *n (0: none new). Poll
 * with the last seq read; spans overwritten before a read are counted in
 * the snapshot's recent_spans_overwritten. Spans a call left out for want
 * of cap stay in the ring for the next call, but no longer count as
 * overwritten if they are lost: a cap of recent_spans (0: 8192) misses
 * nothing uncounted. out may be NULL when cap is 0. A call keeps
 * start times placed for a minute (as gs_hub_keep_start_times), unless
 * gs_hub_options.start_times is GS_HUB_START_TIMES_NEVER: then start_ns is always 0. Takes
 * the harvest lock briefly. Thread-safe.
 *
 * gs_hub_keep_start_times makes harvests place spans on the host clock
 * (start_ns) for the next minute: a reader calls it when it attaches, and
 * then at least once a minute (reading spans does it too), so that the
 * spans it reads carry start times. Placing costs a driver call per span
 * in the harvest (about 600 ns on an H200); without a reader the hub skips
 * it. Thread-safe. */
gs_hub_status gs_hub_recent_spans(gs_hub hub, uint64_t after_seq, gs_hub_span* out, size_t cap,
                                  size_t* n);
gs_hub_status gs_hub_keep_start_times(gs_hub hub);

/* gs_hub_set_log_callback sends hub's log lines to fn (with user) instead
 * of stderr; fn NULL sends them to stderr again (unless
 * gs_hub_options.quiet; quiet does not silence a callback). Lines go
 * through a queue of 256 that a thread of the library's drains, calling
 * fn once per line, in order: whoever logs (a harvest, an HTTP handler)
 * never waits for fn, and when fn falls behind, lines that find the queue
 * full are dropped, counted by gs_hub_log_dropped, and reported by a
 * GS_HUB_LOG_WARNING line before the next one delivered. Lines queued
 * while no callback was set wait for the next one. Setting waits for a
 * running call of the previous callback to return, so its user may be
 * freed then; gs_hub_close delivers what is queued for up to 1 s (the
 * rest dropped and counted) and starts no call of fn after it returns; a
 * call still running by then (a callback that blocks) is left to return on
 * its own, and close does not wait for it. fn must not call gs_hub_set_log_callback or
 * gs_hub_close (they would wait for it); other calls are fine.
 * Thread-safe. */
gs_hub_status gs_hub_set_log_callback(gs_hub hub, gs_hub_log_fn fn, void* user);

/* gs_hub_log_dropped stores in *dropped how many log lines hub dropped
 * because its callback did not keep up (since it was created).
 * Thread-safe. */
gs_hub_status gs_hub_log_dropped(gs_hub hub, uint64_t* dropped);

/* gs_hub_otlp_start starts exporting hub's landed spans as OpenTelemetry
 * traces over OTLP, gRPC or HTTP (go/export/otlp: one trace per sampled step, a
 * root span "gpu step" with the step's lane spans and kernel spans below
 * it). It reads the ring of recent spans, so it keeps start times placed
 * (unless gs_hub_options.start_times is GS_HUB_START_TIMES_NEVER: then nothing can be sent). A
 * goroutine reads the hub every poll_every_ms and queues without waiting;
 * another sends in batches. A full queue or a failed request drops spans,
 * counted on /metrics and gs_hub_metrics as gpuspans_otlp_*; failures are
 * logged (gs_hub_set_log_callback), a collector that speaks the other
 * protocol by name with the fix. Nothing on the span paths waits for the
 * collector. GS_HUB_ERR_INVALID_ARGUMENT names a bad option or variable (an
 * endpoint that is not http:// or https://, none anywhere, an unknown
 * protocol, a malformed OTEL_* value); GS_HUB_ERR_LIMIT when one
 * runs already. gs_hub_otlp_stop stops it: it reads what landed since its
 * last read and sends what is queued for up to timeout_ms (what is left is
 * dropped, counted), or until gs_hub_close begins on another thread;
 * GS_HUB_OK when none runs. gs_hub_close stops it too, with 1 s to send.
 * Thread-safe. */
gs_hub_status gs_hub_otlp_start(gs_hub hub, const gs_hub_otlp_options* opts);
gs_hub_status gs_hub_otlp_stop(gs_hub hub, int32_t timeout_ms);

/* gs_hub_get_step stores the step counter in *step: read it after
 * gs_hub_begin_step for the step being served (gs_hub_link_step).
 * Thread-safe. */
gs_hub_status gs_hub_get_step(gs_hub hub, uint64_t* step);

/* gs_hub_link_step records that step serves the requests of links[0..n),
 * so that the lane spans of that step carry OpenTelemetry links to them
 * when the exporter sends it. Calls for one step add up, to max_links (the
 * rest counted as gpuspans_otlp_links_dropped_total). Call it before the
 * step's spans land (before the next gs_hub_begin_step). A step the
 * exporter does not sample, n 0, or no exporter running: nothing is done,
 * GS_HUB_OK. GS_HUB_ERR_INVALID_ARGUMENT for n over 1024, links NULL with
 * n > 0, or an all-zero id. It copies the links into a ring and allocates
 * nothing once warm. Thread-safe. */
gs_hub_status gs_hub_link_step(gs_hub hub, uint64_t step, const gs_hub_link* links, size_t n);

/* Whose GPU time (docs/design.md): an engine says which requests each lane
 * span served and when a request is done; every lane span is split among
 * its requests by the lane's cost model, and a finished request's record
 * comes out of gs_hub_finished_requests.
 *
 * gs_hub_request_class stores in *request_class the class of requests of
 * model, adapter and tenant (each NULL or "" for none, or a name as lane
 * names are), registering it on first use. Past 1024 classes it stores 1,
 * "other", and returns GS_HUB_ERR_LIMIT. GS_HUB_ERR_INVALID_ARGUMENT for a
 * bad name or a NULL request_class. Thread-safe; call it when a model,
 * adapter or tenant first appears, not per step.
 *
 * gs_hub_serve_requests (inline: no call below Kernel) says that lane's
 * span of the current step serves requests[0..n); calls for one lane and
 * step add up. GS_HUB_ERR_INVALID_ARGUMENT, recording nothing of the call,
 * for an unknown lane, a zero id or one named twice in the lane's span,
 * tokens outside 1..2^24, a context over 2^30, a class never returned, or
 * more requests in flight than max_requests; GS_HUB_ERR_LIMIT when the
 * hub's inbox is full (harvests too rare), the call dropped and counted.
 * It copies the requests and never waits for the GPU or a harvest.
 *
 * gs_hub_end_request says request id is done: its record comes out once
 * its spans landed. GS_HUB_ERR_INVALID_ARGUMENT when no request of that id
 * is in flight (as for any id below Kernel, where none is recorded).
 *
 * gs_hub_lane_work (inline: no call below Kernel) gives lane's span of the
 * current step its work on each device, flops and bytes moved (either 0:
 * not known), for achieved FLOP/s and bandwidth; negative or non-finite
 * values are GS_HUB_ERR_INVALID_ARGUMENT.
 *
 * gs_hub_finished_requests writes to buf, as a JSON array (go/gpuspanshttp/
 * debugpage.RequestJSON, the schema's RequestRecord names) and a NUL, the
 * records of requests finished after after_seq, oldest first, as many
 * whole ones as fit in cap, and stores in *len the bytes before the NUL
 * and in *last_seq the seq of the last one written (after_seq if none):
 * call again after it for the rest. GS_HUB_ERR_TOO_SMALL with the bytes
 * the first record needs in *len when not even it fits. The hub keeps the
 * latest max_requests records. Thread-safe. */
gs_hub_status gs_hub_request_class(gs_hub hub, const char* model, const char* adapter, const char* tenant,
                                   uint16_t* request_class);
gs_hub_status gs_hub_end_request(gs_hub hub, uint64_t id);
gs_hub_status gs_hub_finished_requests(gs_hub hub, uint64_t after_seq, char* buf, size_t cap, size_t* len,
                                       uint64_t* last_seq);
gs_hub_status gs_hub_serve_requests_call(gs_hub hub, int32_t lane, const gs_hub_request* requests, size_t n);
gs_hub_status gs_hub_lane_work_call(gs_hub hub, int32_t lane, double flops, double bytes);

/* The calls behind the inline span functions below. Call those instead:
 * these always make the call (each checks its handle, and does what the Go
 * method of the same name does, in C or in Go: see Cost above). */
gs_hub_status gs_hub_begin_step_call(gs_hub hub);
gs_hub_status gs_hub_lane_begin_call(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_lane_end_call(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_next_lane_call(gs_hub hub, int32_t from, int32_t to);
gs_hub_status gs_hub_next_step_call(gs_hub hub, int32_t last, int32_t first);
uint64_t gs_hub_kernel_begin_call(gs_hub hub, int32_t device, uint64_t kernel, uint64_t stream);
gs_hub_status gs_hub_kernel_end_call(gs_hub hub, uint64_t token);

/* gs_hub_serve_requests and gs_hub_lane_work: see Whose GPU time above. */
static inline gs_hub_status gs_hub_serve_requests(gs_hub hub, int32_t lane, const gs_hub_request* requests,
                                                  size_t n) {
  if (!gs_hub_word_lanes_begin(gs_hub_word(hub))) return GS_HUB_OK;
  return gs_hub_serve_requests_call(hub, lane, requests, n);
}
static inline gs_hub_status gs_hub_lane_work(gs_hub hub, int32_t lane, double flops, double bytes) {
  if (!gs_hub_word_lanes_begin(gs_hub_word(hub))) return GS_HUB_OK;
  return gs_hub_lane_work_call(hub, lane, flops, bytes);
}

/* gs_hub_begin_step marks the start of an engine step: once per step,
 * before its lane spans, on the thread that launches the step's kernels.
 * At Step it counts the step; at Kernel it arms 1 step in
 * kernel_span_every, opens pools installed since, opens and closes kernel
 * windows (some milliseconds, once a window period), and lands finished
 * spans. Never waits for the GPU. No call into Go at Off with no pool and
 * no tracer open. Inline functions skip the handle check when they make no call
 * (they then return GS_HUB_OK whatever the handle). */
static inline gs_hub_status gs_hub_begin_step(gs_hub hub) {
  if (!gs_hub_word_step_has_work(gs_hub_word(hub))) return GS_HUB_OK;
  return gs_hub_begin_step_call(hub);
}

/* gs_hub_lane_begin opens lane's span on every installed device's lane
 * stream, at Kernel (no call below it). A lane out of range or already
 * open is ignored and counted, as in Go. Never blocks. */
static inline gs_hub_status gs_hub_lane_begin(gs_hub hub, int32_t lane) {
  if (!gs_hub_word_lanes_begin(gs_hub_word(hub))) return GS_HUB_OK;
  return gs_hub_lane_begin_call(hub, lane);
}

/* gs_hub_lane_end ends lane's span wherever one is open, at any level (a
 * span begun at Kernel ends even if the level dropped since). No call when
 * the level is below Kernel and no pool is open. Never blocks. */
static inline gs_hub_status gs_hub_lane_end(gs_hub hub, int32_t lane) {
  if (!gs_hub_word_lanes_end(gs_hub_word(hub))) return GS_HUB_OK;
  return gs_hub_lane_end_call(hub, lane);
}

/* gs_hub_next_lane ends lane from's span and begins lane to's at the same
 * event: one record on each device where from is open, where
 * gs_hub_lane_end and gs_hub_lane_begin make two, and one call. Lanes that
 * follow each other in a step (prefill, decode, sample) so cost one event
 * per boundary; to's span then runs from the end of from's work on the
 * stream, including any idle time between them. Where from is not open, to
 * begins as with gs_hub_lane_begin; below Kernel only from ends. A negative
 * from or to names no lane. Otherwise the rules and counts of
 * gs_hub_lane_begin and _end apply. Never blocks. No call when the level is
 * below Kernel and no pool is open. */
static inline gs_hub_status gs_hub_next_lane(gs_hub hub, int32_t from, int32_t to) {
  if (!gs_hub_word_lanes_end(gs_hub_word(hub))) return GS_HUB_OK;
  return gs_hub_next_lane_call(hub, from, to);
}

/* gs_hub_next_step ends lane last's span, begins the next step as
 * gs_hub_begin_step does, and begins lane first's span at the event that
 * ended last's (as gs_hub_next_lane), in one call: for an engine whose last
 * lane of a step runs into the first lane of the next. A negative last or
 * first names no lane. No call when gs_hub_begin_step makes none. */
static inline gs_hub_status gs_hub_next_step(gs_hub hub, int32_t last, int32_t first) {
  if (!gs_hub_word_step_has_work(gs_hub_word(hub))) return GS_HUB_OK;
  return gs_hub_next_step_call(hub, last, first);
}

/* gs_hub_kernel_begin opens a span around the launch of `kernel` on
 * `stream`, on the lowest installed device, when this step is armed for
 * kernel spans, and returns its token for gs_hub_kernel_end; 0 when it
 * opened nothing (not armed: no call; the stream being captured into a
 * graph; a bad handle). Call it just before the launch and
 * gs_hub_kernel_end just after. Never blocks. Every nonzero token must be
 * ended: an unended span is reclaimed as leaked 256 steps later. */
static inline uint64_t gs_hub_kernel_begin(gs_hub hub, uint64_t kernel, uint64_t stream) {
  if (!gs_hub_word_armed(gs_hub_word(hub))) return 0;
  return gs_hub_kernel_begin_call(hub, -1, kernel, stream);
}

/* gs_hub_kernel_begin_on is gs_hub_kernel_begin on device `device`, for
 * processes that drive several GPUs. */
static inline uint64_t gs_hub_kernel_begin_on(gs_hub hub, int32_t device, uint64_t kernel,
                                              uint64_t stream) {
  if (!gs_hub_word_armed(gs_hub_word(hub))) return 0;
  return gs_hub_kernel_begin_call(hub, device, kernel, stream);
}

/* gs_hub_kernel_end closes the span of token; token 0 does nothing (no
 * call). A token not open on this hub (ended already, reclaimed as leaked,
 * from another hub, or made up) changes nothing and returns
 * GS_HUB_ERR_INVALID_ARGUMENT: tokens carry their hub's tag. It acts at
 * any level. Never blocks. */
static inline gs_hub_status gs_hub_kernel_end(gs_hub hub, uint64_t token) {
  if (token == 0) return GS_HUB_OK;
  return gs_hub_kernel_end_call(hub, token);
}

#endif /* GS_HUB_TYPES_ONLY */

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_HUB_H_ */
