#!/bin/bash
cd /work/wt/i21-schemas
TEST_PORT_BASE=21321 timeout 300 node_modules/.bin/deno run -A scripts/_iter.ts postgresql://postgres:postgres@127.0.0.1:21371/postgres > /tmp/iter21.txt 2>&1
grep -E "ERROR|error" /tmp/iter21.txt | head -5
tail -1 /tmp/iter21.txt
