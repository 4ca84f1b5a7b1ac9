package catalog

import (
	"regexp"
	"slices"
)

// baseFields are the keys every entity may carry.
func (c *checker) baseFields(extra map[string]func(string, any)) map[string]func(string, any) {
	m := map[string]func(string, any){
		"name": nil, "label": c.anyStr, "description": c.anyStr, "icon": c.anyStr, "version": nil,
	}
	for k, f := range extra {
		m[k] = f
	}
	return m
}

// checkName validates the required top-level name.
func (c *checker) checkName(obj map[string]any) {
	v, ok := obj["name"]
	if !ok || v == nil {
		c.errf("name", "is required")
		return
	}
	c.name("name", v)
}

func (c *checker) validate(kind Kind, tree any) {
	obj, ok := tree.(map[string]any)
	if !ok {
		c.errf("", "a %s must be a JSON object, not %s", kind.Singular(), typeName(tree))
		return
	}
	c.checkName(obj)
	if v, ok := obj["version"]; ok && v != nil {
		c.integer("version", v, 0)
	}
	switch kind {
	case KindProvider:
		c.provider(obj)
	case KindHardwareType, KindImageType:
		c.machineType(kind, obj)
	case KindService:
		c.service(obj)
	case KindClusterTemplate, KindPartialTemplate:
		c.template(kind, obj)
	case KindProviderType, KindAutomatorType:
		c.pluginType(obj)
	}
}

func (c *checker) provider(obj map[string]any) {
	c.fields("", obj, c.baseFields(map[string]func(string, any){
		"providertype": c.anyName,
		"provisioner": func(p string, v any) {
			if _, ok := v.(map[string]any); !ok {
				c.errf(p, "must be an object of field values, not %s", typeName(v))
			}
		},
		"network": func(p string, v any) {
			o, ok := c.fields(p, v, map[string]func(string, any){"type": c.anyName, "fields": c.stringMap})
			if ok && o["type"] == nil {
				c.errf(join(p, "type"), "is required: the name of a network driver, e.g. \"hosts\"")
			}
		},
	}))
	if obj["providertype"] == nil {
		c.errf("providertype", "is required: the name of a provider type, e.g. \"aws\"")
	}
}

func (c *checker) machineType(kind Kind, obj map[string]any) {
	key := "flavor"
	if kind == KindImageType {
		key = "image"
	}
	c.fields("", obj, c.baseFields(map[string]func(string, any){
		"providermap": func(p string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				c.errf(p, "must be an object mapping provider names to {%q: ...}, not %s", key, typeName(v))
				return
			}
			for _, prov := range sortedKeys(m) {
				pp := join(p, prov)
				if !ValidName(prov) {
					c.errf(pp, "provider name %q %s", prov, nameRule)
				}
				if m[prov] == nil {
					continue
				}
				c.stringMap(pp, m[prov])
			}
		},
	}))
}

var serviceActionSet = map[string]bool{"install": true, "remove": true, "initialize": true, "configure": true, "start": true, "stop": true, "status": true}

func (c *checker) depSet(p string, v any) {
	c.fields(p, v, map[string]func(string, any){"requires": c.nameList, "uses": c.nameList})
}

func (c *checker) links(p string, v any) {
	c.list(p, v, func(lp string, lv any) {
		o, ok := c.fields(lp, lv, map[string]func(string, any){"label": c.anyStr, "url": func(up string, uv any) {
			if s, ok := c.str(up, uv); ok {
				c.macros(up, s)
			}
		}})
		if ok && o["url"] == nil {
			c.errf(join(lp, "url"), "is required")
		}
	})
}

func (c *checker) service(obj map[string]any) {
	c.fields("", obj, c.baseFields(map[string]func(string, any){
		"dependencies": func(p string, v any) {
			c.fields(p, v, map[string]func(string, any){
				"provides": c.nameList, "conflicts": c.nameList, "install": c.depSet, "runtime": c.depSet,
			})
		},
		"provisioner": func(p string, v any) {
			c.fields(p, v, map[string]func(string, any){"actions": func(ap string, av any) {
				acts, ok := av.(map[string]any)
				if !ok {
					c.errf(ap, "must be an object of actions, not %s", typeName(av))
					return
				}
				for _, name := range sortedKeys(acts) {
					np := join(ap, name)
					if !serviceActionSet[name] {
						c.errf(np, "unknown action %q: allowed are install, remove, initialize, configure, start, stop, status", name)
						continue
					}
					if acts[name] == nil {
						continue
					}
					o, ok := c.fields(np, acts[name], map[string]func(string, any){
						"type": c.anyName, "fields": c.stringMap,
						"timeout":     func(tp string, tv any) { c.duration(tp, tv) },
						"maxAttempts": func(mp string, mv any) { c.integer(mp, mv, 1) },
					})
					if ok && o["type"] == nil {
						c.errf(join(np, "type"), "is required: the name of an automator type, e.g. \"shell\"")
					}
				}
			}})
		},
		"links": c.links,
		"units": func(p string, v any) {
			c.list(p, v, func(up string, uv any) {
				if s, ok := c.str(up, uv); ok && !unitRE.MatchString(s) {
					c.errf(up, "%q is not a systemd unit name: letters, digits and :_.@\\- only, not starting with - or ., e.g. \"nginx.service\"", s)
				}
			})
		},
	}))
}

// unitRE is a systemd unit name (systemd.unit(5)): the characters systemd
// allows, at most 255 of them, not starting with a dash or a dot (it would
// read as an option or a hidden file). Nothing a shell would interpret.
var unitRE = regexp.MustCompile(`^[A-Za-z0-9:_@\\][A-Za-z0-9:_.@\\-]{0,254}$`)

func (c *checker) template(kind Kind, obj map[string]any) {
	partial := kind == KindPartialTemplate
	known := c.baseFields(map[string]func(string, any){
		"defaults": c.defaults,
		"compatibility": func(p string, v any) {
			c.fields(p, v, map[string]func(string, any){"services": c.nameList, "hardwaretypes": c.nameList, "imagetypes": c.nameList})
		},
		"constraints":    c.constraints,
		"administration": c.administration,
		"links":          c.links,
		"extends": func(p string, v any) {
			o, ok := c.fields(p, v, map[string]func(string, any){"name": c.anyName})
			if ok && o["name"] == nil {
				c.errf(join(p, "name"), "is required: the parent cluster template")
			}
		},
		"includes": func(p string, v any) {
			c.list(p, v, func(ip string, iv any) {
				o, ok := c.fields(ip, iv, map[string]func(string, any){"name": c.anyName})
				if ok && o["name"] == nil {
					c.errf(join(ip, "name"), "is required: a partial template")
				}
			})
		},
	})
	if partial {
		known["immutable"] = c.boolean
	}
	c.fields("", obj, known)
	if partial {
		for _, k := range []string{"extends", "includes"} {
			if obj[k] != nil {
				c.errf(k, "a partial template must not have %q", k)
			}
		}
		for _, k := range []string{"constraints", "administration", "links"} {
			if obj[k] != nil {
				c.warnf(k, "ignored in a partial template: only defaults and compatibility take part in resolution")
			}
		}
	}
}

func (c *checker) defaults(p string, v any) {
	c.fields(p, v, map[string]func(string, any){
		"services": func(sp string, sv any) {
			c.list(sp, sv, func(ep string, ev any) {
				if _, isStr := ev.(string); isStr {
					c.name(ep, ev)
					return
				}
				o, ok := c.fields(ep, ev, map[string]func(string, any){"name": c.anyName, "config": func(cp string, cv any) {
					if _, ok := cv.(map[string]any); !ok {
						c.errf(cp, "must be an object, not %s", typeName(cv))
						return
					}
					c.macros(cp, cv)
				}})
				if ok && o["name"] == nil {
					c.errf(join(ep, "name"), "is required")
				}
			})
		},
		"provider": c.anyName, "hardwaretype": c.anyName, "imagetype": c.anyName,
		"dnsSuffix": func(dp string, dv any) {
			if s, ok := c.str(dp, dv); ok && s != "" {
				if err := CheckDNSSuffix(s); err != nil {
					c.errf(dp, "%v", err)
				}
			}
		},
		"config": func(cp string, cv any) {
			if _, ok := cv.(map[string]any); !ok {
				c.errf(cp, "must be an object, not %s", typeName(cv))
				return
			}
			c.macros(cp, cv)
		},
	})
}

func (c *checker) groups(p string, v any) {
	c.list(p, v, func(gp string, gv any) {
		if l := c.list(gp, gv, c.anyName); l != nil && len(l) == 0 {
			c.errf(gp, "a group must not be empty")
		}
	})
}

func (c *checker) constraints(p string, v any) {
	c.fields(p, v, map[string]func(string, any){
		"layout": func(lp string, lv any) {
			c.fields(lp, lv, map[string]func(string, any){"mustcoexist": c.groups, "cantcoexist": c.groups})
		},
		"services": func(sp string, sv any) {
			m, ok := sv.(map[string]any)
			if !ok {
				c.errf(sp, "must be an object mapping service names to constraints, not %s", typeName(sv))
				return
			}
			for _, svc := range sortedKeys(m) {
				pp := join(sp, svc)
				if !ValidName(svc) {
					c.errf(pp, "service name %q %s", svc, nameRule)
				}
				if m[svc] == nil {
					continue
				}
				c.fields(pp, m[svc], map[string]func(string, any){
					"hardwaretypes": c.nameList, "imagetypes": c.nameList,
					"quantities": func(qp string, qv any) { c.minMax(qp, qv, 0) },
				})
			}
		},
		"size": func(zp string, zv any) { c.minMax(zp, zv, 1) },
	})
}

// minMax checks {min, max} with min >= floor and min <= max.
func (c *checker) minMax(p string, v any, floor int64) {
	var lo, hi int64
	var haveLo, haveHi bool
	c.fields(p, v, map[string]func(string, any){
		"min": func(mp string, mv any) { lo, haveLo = c.integer(mp, mv, floor) },
		"max": func(mp string, mv any) { hi, haveHi = c.integer(mp, mv, floor) },
	})
	if haveLo && haveHi && lo > hi {
		c.errf(join(p, "min"), "must be <= max (%d > %d)", lo, hi)
	}
}

// maxCheckInterval bounds administration.checkinterval (ms): a year.
const maxCheckInterval = 365 * 24 * 60 * 60 * 1000

func (c *checker) administration(p string, v any) {
	c.fields(p, v, map[string]func(string, any){"checkinterval": func(cp string, cv any) {
		d, ok := c.duration(cp, cv)
		switch {
		case ok && d > 0 && d < 60*1000:
			// Shorter would keep a cluster checking all the time.
			c.errf(cp, "must be at least 1m (or 0: no periodic checks)")
		case ok && d > maxCheckInterval:
			// Longer is no periodic check at all, and overflows the
			// server's time arithmetic.
			c.errf(cp, "must be at most 365d (or 0: no periodic checks)")
		}
	}, "leaseduration": func(lp string, lv any) {
		var d [3]Duration
		var ok [3]bool
		names := []string{"initial", "max", "step"}
		known := map[string]func(string, any){}
		for i, n := range names {
			known[n] = func(np string, nv any) { d[i], ok[i] = c.duration(np, nv) }
		}
		obj, _ := c.fields(lp, lv, known)
		// A missing or null initial is 0, unlimited (docs/catalog.md#lease-settings).
		initialOK := ok[0] || obj["initial"] == nil
		initial, maxd := d[0], d[1]
		if initialOK && ok[1] && maxd != 0 && (initial == 0 || initial > maxd) {
			if initial == 0 {
				c.errf(join(lp, "initial"), "must not be 0 (unlimited) when max is finite (%d ms)", maxd)
			} else {
				c.errf(join(lp, "initial"), "must be <= max (%d > %d ms)", initial, maxd)
			}
		}
	}})
}

var octalRE = regexp.MustCompile(`^[0-7]{3,4}$`)

func (c *checker) paramSet(p string, v any) {
	var declared map[string]any
	var required []any
	c.fields(p, v, map[string]func(string, any){
		"fields": func(fp string, fv any) {
			m, ok := fv.(map[string]any)
			if !ok {
				c.errf(fp, "must be an object mapping field names to field schemas, not %s", typeName(fv))
				return
			}
			declared = m
			for _, f := range sortedKeys(m) {
				sp := join(fp, f)
				if m[f] == nil {
					continue
				}
				o, ok := c.fields(sp, m[f], map[string]func(string, any){
					"label": c.anyStr, "type": c.anyStr, "tip": c.anyStr,
					"options":  func(op string, ov any) { c.list(op, ov, c.anyStr) },
					"default":  func(string, any) {},
					"override": c.boolean, "sensitive": c.boolean,
				})
				if ok {
					for _, req := range []string{"label", "type"} {
						if o[req] == nil {
							c.errf(join(sp, req), "is required")
						}
					}
				}
			}
		},
		"required": func(rp string, rv any) {
			required = c.list(rp, rv, func(sp string, sv any) { c.list(sp, sv, c.anyStr) })
		},
	})
	for i, set := range required {
		l, _ := set.([]any)
		for j, n := range l {
			if s, ok := n.(string); ok {
				if _, ok := declared[s]; !ok {
					c.errf(index(index(join(p, "required"), i), j), "%q is not declared in fields", s)
				}
			}
		}
	}
}

func (c *checker) pluginType(obj map[string]any) {
	c.fields("", obj, c.baseFields(map[string]func(string, any){
		"classname": nil, // Coopr's descriptor bundles carry it; ignored
		"parameters": func(p string, v any) {
			c.fields(p, v, map[string]func(string, any){"admin": c.paramSet, "user": c.paramSet})
		},
		"resourceTypes": func(p string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				c.errf(p, "must be an object, not %s", typeName(v))
				return
			}
			for _, rt := range sortedKeys(m) {
				rp := join(p, rt)
				if m[rt] == nil {
					continue
				}
				var format string
				o, ok := c.fields(rp, m[rt], map[string]func(string, any){
					"format": func(fp string, fv any) {
						if s, ok := c.str(fp, fv); ok {
							format = s
							if !slices.Contains([]string{"file", "archive"}, s) {
								c.errf(fp, "%q is not a format: use \"file\" or \"archive\"", s)
							}
						}
					},
					"permissions": func(pp string, pv any) {
						if s, ok := c.str(pp, pv); ok && !octalRE.MatchString(s) {
							c.errf(pp, "%q must be a 3-4 digit octal string such as \"0400\"", s)
						}
					},
				})
				if !ok {
					continue
				}
				if o["format"] == nil {
					c.errf(join(rp, "format"), "is required: \"file\" or \"archive\"")
				} else if o["permissions"] != nil && format == "archive" {
					c.errf(join(rp, "permissions"), "is allowed only for format \"file\"")
				}
			}
		},
	}))
}
