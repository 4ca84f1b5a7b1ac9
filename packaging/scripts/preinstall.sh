#!/bin/sh
# Runs before the files are unpacked: the config files belong to group
# coopr, so the group must exist first.
set -e

if ! getent group coopr >/dev/null; then
	groupadd --system coopr
fi
if ! getent passwd coopr >/dev/null; then
	useradd --system --gid coopr --home-dir /var/lib/coopr --no-create-home \
		--shell /usr/sbin/nologin --comment "coopr server and agent" coopr
fi
