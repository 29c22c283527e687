#!/usr/bin/env bash
# Installs what a fresh clone needs before the Deno scripts can run:
# npm packages (Deno, PostgREST, the Supabase CLI, the SDKs), Debian's Postgres extras and
# Chromium (the headless browser the client tests drive).
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(postgresql-15 postgresql-client-15 postgresql-15-cron postgresql-15-pgtap
  libtap-parser-sourcehandler-pgtap-perl postgresql-15-plpgsql-check chromium)

missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo_cmd=""
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo_cmd="sudo"
  else
    echo "Missing Debian packages: ${missing[*]}" >&2
    echo "Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "Installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# npm packages: reinstall when package.json or the lock changed since the last install.
stamp=node_modules/.install-stamp
if [ ! -x node_modules/.bin/deno ] || [ ! -f "$stamp" ] || [ package.json -nt "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  echo "Installing npm packages"
  # npm install (not ci): the lock holds only this platform's optional binaries.
  npm install --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
