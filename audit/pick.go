package audit

import "encoding/json"

// identifying are the argument and input field names an entry keeps: they
// say what was changed without holding what it was changed to. Anything
// else (documents, configs, provider fields, secrets, descriptions, URLs,
// which may carry a token) is
// left out by construction, so no secret can reach the log through a
// new argument.
var identifying = map[string]bool{
	"id": true, "clusterId": true, "jobId": true, "taskId": true, "webhookId": true,
	"name": true, "kind": true, "version": true, "tenant": true, "user": true, "role": true,
	"operation": true, "numMachines": true, "clusterTemplate": true, "template": true,
	"services": true, "events": true, "plugin": true, "pluginType": true,
	"resourceType": true, "replace": true, "workers": true, "maxClusters": true, "maxNodes": true,
	"provider": true, "hardwaretype": true, "imagetype": true, "duration": true, "input": true,
	"agents": true, "bootstrap": true,
}

// Pick keeps the identifying arguments of args (as a GraphQL field's
// argument map), descending into input objects, and encodes them.
func Pick(args map[string]any) json.RawMessage {
	b, err := json.Marshal(pick(args))
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

func pick(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if !identifying[k] {
			continue
		}
		switch v := v.(type) {
		case map[string]any:
			if in := pick(v); len(in) > 0 {
				out[k] = in
			}
		case string, bool, float64, int, int64, json.Number, nil:
			out[k] = v
		case []any:
			var keep []any
			for _, x := range v {
				switch x.(type) {
				case string, bool, float64, int, int64, json.Number:
					keep = append(keep, x)
				}
			}
			out[k] = keep
		}
	}
	return out
}
