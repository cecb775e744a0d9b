#!/usr/bin/env bash
# q36 serve's page (GET /) in Debian's headless Chromium, driven by
# puppeteer-core (tests/web, pinned): the files are public and /monitor needs
# the key; the page asks for the key, loads with no console error, keyboard
# use, a reply that streams, settings that reach the request, Stop, Markdown,
# reasoning and tool calls drawn, the monitor following a busy slot to idle,
# a 375px-wide screen. Q36_WEB_SHOTS=DIR keeps a PNG of each view there.
set -u
. "$(dirname "$0")/lib.sh"
PUP=tests/web/node_modules/puppeteer-core
chromium=$(command -v chromium || true)
[ -n "$chromium" ] || { fail web_chromium "chromium is not installed (scripts/setup.sh)"; exit 1; }
[ -d "$PUP" ] || { fail web_puppeteer "$PUP is missing (scripts/setup.sh)"; exit 1; }
default_model web_model
key=web-key-$$
printf '%s\n' "$key" >"$tmp/key"
# -c 4096: room for a 4,000-token reply, long enough to be seen busy and stopped.
"$Q36" serve --port 0 -np 2 -c 4096 --api-key-file "$tmp/key" >"$tmp/out" 2>"$tmp/err" &
pid=$!
url=$(wait_url "$tmp/out" $pid)
if [ -z "$url" ]; then
    fail web_server "did not start: $(cat "$tmp/err")"
    kill $pid 2>/dev/null
    exit 1
fi
shots=${Q36_WEB_SHOTS:-}
[ -z "$shots" ] || mkdir -p "$shots"
# Chromium's own profile and crash folders go under $tmp.
HOME=$tmp timeout 90 node tests/web/web.mjs "$url" "$key" "$chromium" $shots
rc=$?
[ $rc -eq 124 ] && fail web_timeout "tests/web/web.mjs ran past 90 s"
kill -TERM $pid
wait $pid
src=$?
# Exit 0 after SIGTERM: under make asan, also no leak or error report.
[ $src -eq 0 ] && ok web_server_stops || fail web_server_stops "exit $src: $(grep -m1 -E 'ERROR|runtime error' "$tmp/err")"
[ $rc -eq 0 ] && [ $src -eq 0 ] || { echo "# the server's last lines:"; tail -n 30 "$tmp/err" | sed 's/^/#   /'; }
[ $rc -eq 0 ] && [ $src -eq 0 ]
