#!/usr/bin/env bash
# The test suite again on Node 24 LTS, after `npm test` ran it on the machine's Node.
#
# - Node 24 is the machine's own when `node` is 24; otherwise the npm registry's Node binaries
#   (`node-<platform>-<arch>@NODE24_VERSION`), unpacked once into a shared directory: the process
#   executor's sandbox users run the agents with this Node, so it must not sit under a private home
#   (/usr/local/lib/agent-runs-ci as root, the cache directory otherwise; NODE24_HOME overrides).
# - The one native module the suite loads through Node's ABI, better-sqlite3, is rebuilt for Node 24
#   from source (once per version pair: the build is cached beside that Node) and put back as it
#   was when the run ends, so the tree still works on the machine's Node.
# - Then vitest runs the test files again, but for those that test nothing of Node itself (listed
#   in NODE24_SKIP below, with why): every package and every end-to-end file of the example server
#   runs on Node 24. Type checking and lint do not depend on the Node version and are not
#   repeated. Arguments go to vitest instead of that list (`.ci/node24.sh packages/core`).
set -euo pipefail
cd "$(dirname "$0")/.."

NODE24_VERSION="${NODE24_VERSION:-24.22.3}"
CACHE="${AGENT_RUNS_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-runs-ci}"

# The files the Node 24 run leaves out (extended regular expressions on the path): what they test
# is not Node's, and their packages have other files that run.
NODE24_SKIP=(
  # The pure core's rules (no Node API; the memory suites of packages/core/test/memory run).
  '^packages/core/test/[^/]+\.test\.ts$'
  # PostgreSQL's answers to the same driver calls the other storage-pg files make.
  '^packages/storage-pg/test/conformance\.test\.ts$'
  # The dashboard in Chromium (its serving and the API it calls run).
  '^packages/server/test/(dashboard-(audit|counts|factory|members|sign-in|teams)|dashboard|offline-pages)\.test\.ts$'
  # The Docker engine's behaviour (the executor's own tests run).
  '^packages/executor-docker/test/conformance\.test\.ts$'
)
if [ "$#" -eq 0 ]; then
  skip="$(IFS='|'; echo "${NODE24_SKIP[*]}")"
  mapfile -t files < <(git ls-files 'packages/*/test/*.test.ts' 'packages/*/test/**/*.test.ts' 'examples/*/test/*.test.ts' \
    'examples/*/test/**/*.test.ts' 'docs/test/*.test.ts' | sort -u | grep -Ev "$skip")
  set -- "${files[@]}"
  echo "== node 24: ${#files[@]} test files (NODE24_SKIP leaves out the rest)"
fi

if [ "$(node -p 'process.versions.node.split(".")[0]')" = 24 ]; then
  # `npm ci` built the native modules for this Node already.
  exec node node_modules/vitest/vitest.mjs run "$@"
fi

if [ "$(id -u)" = 0 ]; then shared=/usr/local/lib/agent-runs-ci; else shared="$CACHE"; fi
NODE24_HOME="${NODE24_HOME:-$shared/node-v$NODE24_VERSION}"
if [ ! -x "$NODE24_HOME/bin/node" ]; then
  package="node-$(node -p 'process.platform')-$(node -p 'process.arch')@$NODE24_VERSION"
  echo "== installing $package from the npm registry"
  unpack="$(mktemp -d)"
  (cd "$unpack" && npm pack "$package" --silent > /dev/null && tar xzf ./*.tgz)
  mkdir -p "$(dirname "$NODE24_HOME")"
  chmod a+rx "$unpack/package"
  rm -rf "$NODE24_HOME"
  mv "$unpack/package" "$NODE24_HOME"
  rm -rf "$unpack"
fi
export PATH="$NODE24_HOME/bin:$PATH"
echo "== node $(node --version)"

# better-sqlite3 for Node 24's ABI, and the machine's build back when the run ends.
addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node
sqlite_version="$(node -p 'require("./node_modules/better-sqlite3/package.json").version')"
built="$CACHE/better-sqlite3-$sqlite_version-abi$(node -p 'process.versions.modules').node"
loads() { node -e 'new (require("better-sqlite3"))(":memory:").close()' 2> /dev/null; }
# Replaced by a rename, never written over: a process that loaded the file keeps its copy.
put() { cp "$1" "$addon.tmp" && mv -f "$addon.tmp" "$addon"; }
own="$(mktemp)"
cp "$addon" "$own"
trap 'put "$own"; rm -f "$own"' EXIT
[ -f "$built" ] && put "$built"
if ! loads; then
  echo "== building better-sqlite3 $sqlite_version for node $(node --version)"
  # The headers of this Node (npm's node-gyp would take those of the Node npm was installed with).
  npm_config_nodedir="$NODE24_HOME" npm_config_build_from_source=true \
    npm rebuild better-sqlite3 --no-audit --no-fund > /dev/null
  loads || { echo "better-sqlite3 does not load on node $(node --version) after its rebuild" >&2; exit 1; }
  mkdir -p "$CACHE"
  cp "$addon" "$built.tmp" && mv -f "$built.tmp" "$built"
fi

node node_modules/vitest/vitest.mjs run "$@"
