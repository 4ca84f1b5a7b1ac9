#!/bin/sh
set -e

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
# Purging removes the agent's work files. The coopr user stays (files it
# owned elsewhere would otherwise be orphaned to a reused id), as does any
# database.
if [ "$1" = "purge" ]; then
	rm -rf /var/lib/coopr
fi
