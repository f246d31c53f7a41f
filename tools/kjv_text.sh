#!/bin/sh
# A public-domain English text for perplexity: chapters of the King James Bible
# as Debian's bible-kjv package prints them, one verse a line, without the
# verse references.
#   tools/kjv_text.sh 'Genesis1:1-5:32' > tests/data/text/genesis-1-5.txt
# Needs: apt-get install bible-kjv
set -eu
bible -f -l 100000 "${1:-Genesis1:1-5:32}" | sed -n 's/^[1-9A-Za-z]*[0-9]*:[0-9]* //p'
