# Sourced by ./run, ./test and ./fuzz: install what is missing on a Debian 12
# machine. deps_build: what building needs; deps_test: what the test suite needs
# on top. quiet: run a setup or build step without its chatter. sanitizer_env and
# fuzz_build: what ./test and ./fuzz share to build and run the fuzz targets.

_apt_updated=0
_apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    if [ $_apt_updated -eq 0 ]; then
        $sudo apt-get update -qq >&2
        _apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

deps_build() {
    # python3-onnx for onnx/onnx-data.proto (SequenceProto, OptionalProto), which
    # libonnx-dev lacks; zlib for .npz archives; OpenBLAS is loaded at run time
    # (the evaluator has loops of its own without it), cJSON only for the tests
    _apt_install gcc libc6-dev pkg-config meson ninja-build protobuf-c-compiler \
        libprotobuf-c-dev zlib1g-dev libcjson-dev libonnx-dev libopenblas-dev python3-onnx
}

deps_test() {
    deps_build
    _apt_install libcmocka-dev python3-onnx python3-numpy python3-jsonschema \
        libonnx-testdata clang libclang-rt-14-dev
    # cli_docs checks the zsh completion's syntax and the man page's rendering
    _apt_install zsh man-db
    # cli_html_browser loads the --html pages in headless Chromium and reads its
    # screenshots with PIL; where chromium cannot be installed the test skips
    _apt_install python3-pil
    _apt_install chromium || echo "chromium not installed: cli_html_browser will skip" >&2
    # The Python package: its extension (Python.h), and pip install . offline
    # through Debian's meson-python.
    _apt_install python3-dev python3-pip python3-mesonpy
    # The real-model suite (tests/real) exports its PyTorch models with these.
    _apt_install python3-torch python3-torchvision
    # Node.js may come from elsewhere than Debian (its own npm bundled): only a
    # machine without the commands gets Debian's.
    command -v node >/dev/null 2>&1 || _apt_install nodejs
    command -v npm >/dev/null 2>&1 || _apt_install npm
    # ONNX Runtime: its CPU library ships in the npm package; the install script
    # only fetches GPU parts (and fails offline), hence --ignore-scripts.
    local cache="$1/.cache"
    if [ ! -d "$cache/node_modules/onnxruntime-node" ]; then
        mkdir -p "$cache"
        (cd "$cache" && { [ -f package.json ] || echo '{"private":true}' > package.json; } &&
            npm install --ignore-scripts --no-audit --no-fund onnxruntime-node >&2)
    fi
}

# Run a setup or build step quietly; when it fails, its last output goes to
# stderr (a CI log would otherwise end with no reason) and the script exits.
quiet() {
    local out
    if ! out=$("$@" 2>&1); then
        printf '%s\n' "$out" | tail -n 60 >&2
        echo "failed: $*" >&2
        exit 1
    fi
}

# How ASan and UBSan report in every test and fuzz run: a UBSan finding fails
# the run like an ASan one instead of printing and going on, and leaks count.
sanitizer_env() {
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
}

# The libFuzzer build (clang, ASan+UBSan, no test suite) in ROOT/build/fuzz, set
# up once and brought up to date; ./test smoke-runs it and ./fuzz runs it longer,
# so both must fuzz the same binaries.
fuzz_build() {
    local dir="$1/build/fuzz"
    if [ ! -f "$dir/build.ninja" ]; then
        quiet env CC=clang meson setup "$dir" "$1" -Dbuildtype=debug \
            -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true -Dtests=false
    fi
    quiet ninja -C "$dir"
}
