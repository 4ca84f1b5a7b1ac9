#!/bin/sh
set -e

# The units' StateDirectory= makes these too; made here as well so that
# they exist for `coopr agent` run by hand and for ReadWritePaths=.
install -d -o coopr -g coopr -m 0750 /var/lib/coopr
install -d -o coopr -g coopr -m 0700 /var/lib/coopr/work

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
	# An upgrade restarts what runs. A first install starts nothing: the
	# services need settings first (/etc/coopr/server.env, agent.env).
	systemctl try-restart coopr-server.service coopr-agent.service >/dev/null || true
fi

if [ "$1" = "configure" ] && [ -z "$2" ]; then
	cat <<'MSG'
coopr installed. Next:
  server: set COOPR_DATABASE_URL (and COOPR_CREDENTIAL_KEY) in /etc/coopr/server.env,
          then: systemctl enable --now coopr-server
  agent:  set COOPR_SERVER, COOPR_TOKEN and COOPR_AGENT_CAPACITY in /etc/coopr/agent.env,
          then: systemctl enable --now coopr-agent
          (the local vm driver needs /usr/share/coopr/coopr-agent-local.conf as a drop-in)
MSG
fi
