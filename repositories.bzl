"""Repositories gpuspans needs, for WORKSPACE mode (Bazel 4.2.x-6.x).

A consumer's WORKSPACE, after declaring com_github_gpuspans_gpuspans:

    load("@com_github_gpuspans_gpuspans//:repositories.bzl", "gpuspans_rules_dependencies")

    gpuspans_rules_dependencies()

    load("@com_github_gpuspans_gpuspans//:dependencies.bzl", "gpuspans_dependencies")

    gpuspans_dependencies()

Two macros in two files because a .bzl file cannot load from a repository
that is not declared yet: this one declares the rule sets (rules_go and
gazelle with gpuspans' patches), dependencies.bzl loads them. A repository
the WORKSPACE declared first is kept (maybe), so a consumer may pin its own.
"""

load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")
load("@bazel_tools//tools/build_defs/repo:utils.bzl", "maybe")

def gpuspans_rules_dependencies():
    """Declares bazel_skylib, platforms, rules_go, gazelle and rules_proto."""
    maybe(
        http_archive,
        name = "bazel_skylib",
        sha256 = "f7be3474d42aae265405a592bb7da8e171919d74c16f082a5457840f06054728",
        urls = [
            "https://mirror.bazel.build/github.com/bazelbuild/bazel-skylib/releases/download/1.2.1/bazel-skylib-1.2.1.tar.gz",
            "https://github.com/bazelbuild/bazel-skylib/releases/download/1.2.1/bazel-skylib-1.2.1.tar.gz",
        ],
    )

    maybe(
        http_archive,
        name = "platforms",
        sha256 = "379113459b0feaf6bfbb584a91874c065078aa673222846ac765f86661c27407",
        urls = [
            "https://mirror.bazel.build/github.com/bazelbuild/platforms/releases/download/0.0.5/platforms-0.0.5.tar.gz",
            "https://github.com/bazelbuild/platforms/releases/download/0.0.5/platforms-0.0.5.tar.gz",
        ],
    )

    # rules_go v0.34.0 is the last release that supports Bazel 4.2.x; our
    # patch lets it drive Go 1.26 (third_party/rules_go/README.md says how
    # and why). Label() resolves in this repository, from any workspace.
    maybe(
        http_archive,
        name = "io_bazel_rules_go",
        patch_args = ["-p1"],
        patches = [Label("//third_party/rules_go:rules_go-v0.34.0.patch")],
        sha256 = "16e9fca53ed6bd4ff4ad76facc9b7b651a89db1689a2877d6fd7b82aa824e366",
        urls = [
            "https://mirror.bazel.build/github.com/bazelbuild/rules_go/releases/download/v0.34.0/rules_go-v0.34.0.zip",
            "https://github.com/bazelbuild/rules_go/releases/download/v0.34.0/rules_go-v0.34.0.zip",
        ],
    )

    # gazelle v0.27.0 is the last release that works with rules_go v0.34.0;
    # our patch teaches it the unix build constraint, and patch_cmds (the
    # same command as tools/bootstrap.sh's) write its known-imports tables
    # as struct literals (third_party/gazelle/README.md).
    maybe(
        http_archive,
        name = "bazel_gazelle",
        patch_args = ["-p1"],
        patch_cmds = [
            r"""sed -i -E 's/label\.New\(("[^"]*"), ("[^"]*"), ("[^"]*")\)/label.Label{Repo: \1, Pkg: \2, Name: \3}/g' language/proto/known_*imports.go""",
        ],
        patches = [Label("//third_party/gazelle:gazelle-v0.27.0.patch")],
        sha256 = "efbbba6ac1a4fd342d5122cbdfdb82aeb2cf2862e35022c752eaddffada7c3f3",
        urls = [
            "https://mirror.bazel.build/github.com/bazelbuild/bazel-gazelle/releases/download/v0.27.0/bazel-gazelle-v0.27.0.tar.gz",
            "https://github.com/bazelbuild/bazel-gazelle/releases/download/v0.27.0/bazel-gazelle-v0.27.0.tar.gz",
        ],
    )

    maybe(
        http_archive,
        name = "rules_proto",
        sha256 = "e017528fd1c91c5a33f15493e3a398181a9e821a804eb7ff5acdd1d2d6c2b18d",
        strip_prefix = "rules_proto-4.0.0-3.20.0",
        urls = [
            "https://github.com/bazelbuild/rules_proto/archive/refs/tags/4.0.0-3.20.0.tar.gz",
        ],
    )
