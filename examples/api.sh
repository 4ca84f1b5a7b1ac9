#!/usr/bin/env bash
# The GraphQL API with nothing but curl and a websocket client (`coopr
# watch`): import a catalog (examples/catalog unless CATALOG names
# another), preview a cluster, create exactly what was previewed, and watch
# it being built.
#
#   COOPR_SERVER=http://127.0.0.1:8080 COOPR_TOKEN=coopr_... examples/api.sh [TEMPLATE] [SIZE]
#
# The token is a tenant admin's (`coopr token create --tenant T --user admin`).
# The catalog's provider and automator types are the superadmin's to import
# (`coopr catalog bundle --only shared`); this imports the rest. Agents must
# serve the tenant for the cluster to get past PENDING. COOPR is the coopr
# binary, bin/coopr of this checkout unless set (`make build` writes it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${COOPR_SERVER:=http://127.0.0.1:8080}"
: "${COOPR_TOKEN:?set COOPR_TOKEN to an API token (coopr token create)}"
: "${COOPR:=$here/../bin/coopr}"
: "${CATALOG:=$here/catalog}"
if ! command -v "$COOPR" >/dev/null; then
  echo "api.sh: no coopr binary at $COOPR: run make build, or set COOPR to one" >&2
  exit 1
fi
template=${1:-web-cluster}
size=${2:-3}
export COOPR_SERVER COOPR_TOKEN

# gql QUERY [VARIABLES-JSON]: one request; prints the response.
gql() {
  # The body goes through stdin: a catalog is too big for an argument.
  printf '{"query":%s,"variables":%s}' "$(printf '%s' "$1" | json_string)" "${2:-null}" |
    curl -sS --fail-with-body -H "Authorization: Bearer $COOPR_TOKEN" -H 'Content-Type: application/json' \
      --data-binary @- "$COOPR_SERVER/graphql"
  echo
}

# json_string: stdin as a JSON string (quotes, backslashes, newlines).
json_string() { sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | awk 'BEGIN { printf "\"" } NR > 1 { printf "\\n" } { printf "%s", $0 } END { printf "\"" }'; }

# field NAME: the first string value of NAME in the JSON on stdin.
field() { grep -o "\"$1\":\"[^\"]*\"" | head -1 | cut -d'"' -f4; }

echo "== import the catalog from $CATALOG"
bundle=$("$COOPR" catalog bundle --only tenant "$CATALOG")
gql 'mutation($d: JSON!) { importCatalog(document: $d) { created updated unchanged deleted } }' "{\"d\": $bundle}"

input="{\"name\": \"demo\", \"clusterTemplate\": \"$template\", \"numMachines\": $size}"
echo "== preview $template with $size nodes"
preview=$(gql 'mutation($in: ClusterInput!) { previewCluster(input: $in) { planHash nodes { nodenum hostname services } } }' "{\"in\": $input}")
echo "$preview"
hash=$(field planHash <<<"$preview")

echo "== create exactly that plan"
created=$(gql 'mutation($in: ClusterInput!, $h: String) { createCluster(input: $in, expectedPlanHash: $h) { id status } }' \
  "{\"in\": $input, \"h\": \"$hash\"}")
echo "$created"
id=$(field id <<<"$created")

echo "== watch cluster $id"
exec "$COOPR" watch "$id"
