#!/bin/sh
set -e

# On removal (not on upgrade) stop and disable the services: their binary goes.
if [ "$1" = "remove" ] && [ -d /run/systemd/system ]; then
	systemctl disable --now coopr-agent.service coopr-server.service >/dev/null 2>&1 || true
fi
