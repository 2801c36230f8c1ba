#!/usr/bin/env bash
# Set-up steps that `make build` and `make test` share; each is safe to run again.
#   tools/setup.sh venv    create .venv (Python >= 3.11) and install the package with dev tools
#   tools/setup.sh redis   make sure a redis-server >= 7.0 exists (apt-get when root)
#   tools/setup.sh node_packages  Node.js and npm (apt-get when root), then tests/node's packages
#   tools/setup.sh go_packages  Go and redigo from Debian's packages (apt-get when root), for the
#                          bundle's Go consumer, built offline in GOPATH mode
#   tools/setup.sh valgrind_tools  valgrind for the benchmark's instruction counts (apt-get when
#                          root; otherwise a note, and the benchmark leaves those rows out)
set -euo pipefail

root_install() {
  # Debian's packages, installed only when we are root on an apt system; otherwise say what to do.
  local what=$1; shift
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing $what with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "$@" >/dev/null
  else
    echo "error: $what is required: install it (Debian/Ubuntu: sudo apt-get install $*)" >&2
    exit 1
  fi
}

venv() {
  local python=${PYTHON:-python3}
  if ! command -v "$python" >/dev/null; then
    root_install "Python 3.11+" python3 python3-venv
  fi
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "error: Python >= 3.11 is required; $python is $("$python" --version 2>&1)" >&2
    exit 1
  fi
  if [ ! -x .venv/bin/python ]; then
    rm -rf .venv
    if ! "$python" -m venv .venv 2>/dev/null; then
      # Debian splits venv (and its ensurepip) into a package of its own.
      rm -rf .venv
      root_install "Python's venv module" python3-venv
      "$python" -m venv .venv
    fi
  fi
  .venv/bin/python -m pip install -q --upgrade pip
  # compat mode puts the repository on sys.path with one .pth line; the default mode's import
  # hook costs every command about 10 ms of start-up.
  # The toolchain (the build extra) and the development tools; a service needs neither.
  .venv/bin/python -m pip install -q -e '.[build,dev]' --config-settings editable_mode=compat
}

redis_version() {
  # "Redis server v=7.0.15 sha=..." -> 7.0.15
  "$1" --version 2>/dev/null | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p'
}

redis() {
  local binary=${REDIS_SERVER:-redis-server}
  if ! command -v "$binary" >/dev/null && [ -z "${REDIS_SERVER:-}" ]; then
    root_install "redis-server >= 7.0" redis-server
  fi
  if ! command -v "$binary" >/dev/null; then
    echo "error: REDIS_SERVER=$binary not found" >&2
    exit 1
  fi
  local version
  version=$(redis_version "$binary")
  if [ -z "$version" ] || [ "${version%%.*}" -lt 7 ]; then
    echo "error: redis-server >= 7.0 is required; $binary is ${version:-of unknown version}" \
      "(Debian 12+/Ubuntu 24.04+: apt-get install redis-server, or set REDIS_SERVER)" >&2
    exit 1
  fi
}

node_packages() {
  # The bundle's second runtime in the tests: Node.js with the ioredis that package.json pins.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    root_install "Node.js and npm" nodejs npm
  fi
  npm ci --prefix tests/node --no-audit --no-fund --silent
}

go_packages() {
  # Debian installs redigo's source under /usr/share/gocode, where GOPATH mode finds it offline.
  if ! command -v go >/dev/null || [ ! -d /usr/share/gocode/src/github.com/gomodule/redigo/redis ]; then
    root_install "Go and redigo" golang-go golang-github-gomodule-redigo-dev
  fi
}

valgrind_tools() {
  if command -v valgrind >/dev/null && command -v callgrind_control >/dev/null; then
    return
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    root_install "valgrind" valgrind
  else
    echo "note: valgrind is not installed: the benchmark's instruction counts are left out" \
      "(Debian/Ubuntu: sudo apt-get install valgrind)" >&2
  fi
}

"$@"
