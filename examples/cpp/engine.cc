// A C++ engine loop driving the gpuspans hub through its C ABI
// (gpuspans/hub.h): prefill and decode lanes every step, kernel spans
// around launches on armed steps, the HTTP surface, and a JSON snapshot at
// the end. By default it runs on the simulated GPU, so it works anywhere;
// --cuda records on CUDA device 0's legacy stream instead (this example
// launches no CUDA kernels itself: a real engine puts its launches where
// the simulated ones are).
//
//   bazel run //cpp:engine -- --steps=1000 --listen=127.0.0.1:9464
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpuspans/hub.h"

namespace {

// check turns a failed call into an exception naming it and the hub's
// last error.
void check(gs_hub hub, gs_hub_status st, const char* what) {
  if (st == GS_HUB_OK) return;
  char buf[1024];
  gs_hub_last_error(hub, buf, sizeof buf);
  throw std::runtime_error(std::string(what) + ": " + gs_hub_status_name(st) + ": " + buf);
}

// Lane is a scoped lane span: begun on construction, ended on destruction.
// Below level Kernel both are one load of the hub's state word.
class Lane {
 public:
  Lane(gs_hub hub, int32_t lane) : hub_(hub), lane_(lane) { gs_hub_lane_begin(hub_, lane_); }
  ~Lane() { gs_hub_lane_end(hub_, lane_); }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

 private:
  gs_hub hub_;
  int32_t lane_;
};

// KernelSpan is a scoped kernel span around one launch; on steps not armed
// for kernel spans it costs one load and a branch.
class KernelSpan {
 public:
  KernelSpan(gs_hub hub, uint64_t kernel, uint64_t stream)
      : hub_(hub), token_(gs_hub_kernel_begin(hub, kernel, stream)) {}
  ~KernelSpan() { gs_hub_kernel_end(hub_, token_); }
  KernelSpan(const KernelSpan&) = delete;
  KernelSpan& operator=(const KernelSpan&) = delete;

 private:
  gs_hub hub_;
  uint64_t token_;
};

struct Flags {
  long steps = 200;
  bool cuda = false;
  std::string listen;
  int32_t level = GS_HUB_LEVEL_KERNEL;
};

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a.rfind("--steps=", 0) == 0) {
      f.steps = std::atol(a.c_str() + 8);
    } else if (a == "--cuda") {
      f.cuda = true;
    } else if (a.rfind("--listen=", 0) == 0) {
      f.listen = a.substr(9);
    } else if (a.rfind("--level=", 0) == 0) {
      std::string l = a.substr(8);
      f.level = l == "off" ? GS_HUB_LEVEL_OFF : l == "step" ? GS_HUB_LEVEL_STEP : GS_HUB_LEVEL_KERNEL;
    } else {
      throw std::runtime_error("unknown flag " + a +
                               " (want --steps=N, --cuda, --listen=ADDR, --level=off|step|kernel)");
    }
  }
  return f;
}

// Kernel handles: a real engine passes its CUfunction values.
constexpr uint64_t kAttention = 0xa77e;
constexpr uint64_t kMLP = 0x3170;
constexpr uint64_t kStream = 0;

}  // namespace

int main(int argc, char** argv) {
  gs_hub hub = 0;
  try {
    Flags f = parse(argc, argv);
    const char* lanes[] = {"prefill", "decode"};
    gs_hub_options o = gs_hub_options_init();
    o.lanes = lanes;
    o.num_lanes = 2;
    o.level = f.level;
    o.kernel_span_every = 16;
    check(0, gs_hub_create(&o, &hub), "gs_hub_create");
    if (f.cuda) {
      check(hub, gs_hub_install_cuda(hub, 0, kStream), "gs_hub_install_cuda");
    } else {
      check(hub, gs_hub_install_sim(hub, 0, kStream, 3000), "gs_hub_install_sim");
    }
    check(hub, gs_hub_register_kernel(hub, kAttention, "attention"), "gs_hub_register_kernel");
    check(hub, gs_hub_register_kernel(hub, kMLP, "mlp"), "gs_hub_register_kernel");
    int32_t prefill, decode;
    check(hub, gs_hub_lane_index(hub, "prefill", &prefill), "gs_hub_lane_index");
    check(hub, gs_hub_lane_index(hub, "decode", &decode), "gs_hub_lane_index");
    if (!f.listen.empty()) {
      char bound[128];
      check(hub, gs_hub_serve(hub, f.listen.c_str(), std::getenv("GPUSPANS_TOKEN"), 0, bound, sizeof bound),
            "gs_hub_serve");
      std::printf("live page: http://%s/debug/gpuspans\n", bound);
    }

    // launch stands for a kernel launch: simulated work, or nothing on CUDA.
    auto launch = [&](int64_t ns) {
      if (!f.cuda) check(hub, gs_hub_sim_launch(hub, 0, kStream, ns), "gs_hub_sim_launch");
    };
    for (long step = 0; step < f.steps; step++) {
      gs_hub_begin_step(hub);
      if (step % 8 == 0) {
        Lane l(hub, prefill);
        KernelSpan k(hub, kAttention, kStream);
        launch(400000);
      }
      {
        Lane l(hub, decode);
        for (int layer = 0; layer < 4; layer++) {
          {
            KernelSpan k(hub, kAttention, kStream);
            launch(20000);
          }
          KernelSpan k(hub, kMLP, kStream);
          launch(30000);
        }
      }
      if (!f.cuda) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    uint64_t in_flight = 0;
    check(hub, gs_hub_drain(hub, 2000, &in_flight), "gs_hub_drain");

    size_t len = 0;
    gs_hub_status st = gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, nullptr, 0, &len);
    if (st != GS_HUB_ERR_TOO_SMALL) check(hub, st, "gs_hub_snapshot");
    std::vector<char> json(len + 4096);
    check(hub, gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, json.data(), json.size(), &len), "gs_hub_snapshot");
    std::printf("%s\n", json.data());
    check(hub, gs_hub_close(hub), "gs_hub_close");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine: %s\n", e.what());
    if (hub != 0) gs_hub_close(hub);
    return 1;
  }
  return 0;
}
