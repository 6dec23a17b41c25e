"""The second half of gpuspans' WORKSPACE setup; see repositories.bzl."""

load("@bazel_gazelle//:deps.bzl", "gazelle_dependencies", "go_repository")
load("@io_bazel_rules_go//go:deps.bzl", "go_register_toolchains", "go_rules_dependencies")
load("@rules_proto//proto:repositories.bzl", "rules_proto_dependencies", "rules_proto_toolchains")
load("//:deps.bzl", "go_dependencies")

# The same Go as tools/bootstrap.sh (GO_SDK_VERSION) and go.mod.
GO_VERSION = "1.26.8"

def gpuspans_dependencies(register_go_toolchain = True):
    """Declares protoc, gpuspans' Go modules and rules_go's and gazelle's own.

    Call it after gpuspans_rules_dependencies() and a load of this file.

    Args:
      register_go_toolchain: registers Go GO_VERSION; pass False to register
        a Go toolchain of your own (gpuspans needs Go 1.26).
    """

    # Declares @com_google_protobuf (protoc); offline, the bootstrap
    # overrides it with a wrapper around Debian's protoc.
    rules_proto_dependencies()
    rules_proto_toolchains()

    # gpuspans' Go module dependencies (deps.bzl, generated from go.mod).
    go_dependencies()

    # go_rules_dependencies() would declare x/tools as a GitHub tarball;
    # declared first as a go_repository, it comes from the Go module proxy.
    go_repository(
        name = "org_golang_x_tools",
        importpath = "golang.org/x/tools",
        sum = "h1:W07d4xkoAUSNOkOzdzXCdFGxT7o2rW4q8M34tB2i//k=",
        version = "v0.0.0-20200825202427-b303f430e36d",
    )

    go_rules_dependencies()
    if register_go_toolchain:
        go_register_toolchains(version = GO_VERSION)

    # go_repository rules resolve imports against the repositories that
    # gpuspans' WORKSPACE names (deps.bzl, as a repository macro), whichever
    # workspace calls this.
    gazelle_dependencies(go_repository_default_config = str(Label("//:WORKSPACE")))
