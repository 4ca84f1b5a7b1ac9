package solver

import (
	"fmt"
	"slices"
	"strings"
)

// candidate is a node layout that could have held a service, used to say why
// it did not.
type candidate struct {
	m       mask
	hw, img string // "" = any type of the map
}

// exclusion names the first rule that rules out a candidate, or "".
func (p *problem) exclusion(c candidate, hws, imgs []string) string {
	for g, ids := range p.cant {
		if c.m.hasAll(ids) {
			return "cantcoexist [" + strings.Join(p.cantNames[g], " ") + "]"
		}
	}
	for g, ids := range p.must {
		if c.m.hasAny(ids) && !c.m.hasAll(ids) {
			return "mustcoexist [" + strings.Join(p.mustNames[g], " ") + "]"
		}
	}
	if c.hw != "" {
		hws = []string{c.hw}
	}
	if c.img != "" {
		imgs = []string{c.img}
	}
	if !slices.ContainsFunc(hws, func(h string) bool { return p.allowsHW(c.m, h) }) {
		return "the hardware type whitelist of " + p.whitelisted(c.m, p.hwList) + " (allowed here: " + strings.Join(hws, ", ") + ")"
	}
	okImg := false
	for _, i := range imgs {
		if p.allowsImg(c.m, i) {
			okImg = true
			break
		}
	}
	if !okImg {
		return "the image type whitelist of " + p.whitelisted(c.m, p.imgList) + " (allowed here: " + strings.Join(imgs, ", ") + ")"
	}
	return ""
}

func (p *problem) allowsImg(m mask, img string) bool {
	for i := range p.constrained {
		if m.has(i) {
			if l := p.imgList[i]; len(l) > 0 && !slices.Contains(l, img) {
				return false
			}
		}
	}
	return true
}

func (p *problem) whitelisted(m mask, lists [][]string) string {
	var names []string
	for i, s := range p.constrained {
		if m.has(i) && len(lists[i]) > 0 {
			names = append(names, s)
		}
	}
	return strings.Join(names, ", ")
}

func (p *problem) quantityText(s int) string {
	hi := "∞"
	if p.max[s] < inf {
		hi = fmt.Sprint(p.max[s])
	}
	return fmt.Sprintf("%d..%s", p.min[s], hi)
}

// explain builds the LAYOUT_UNSATISFIABLE error (docs/solver.md#explanations).
// candidates returns, for a service with no home, the layouts that could have
// held it.
func (p *problem) explain(k *counter, n int, candidates func(s int) []candidate, hws, imgs []string) *Error {
	reasons := p.reasons(k, n, candidates, hws, imgs)
	return &Error{Kind: KindNoLayout, Message: strings.Join(reasons, "; "), Reasons: reasons}
}

func (p *problem) reasons(k *counter, n int, candidates func(s int) []candidate, hws, imgs []string) []string {
	// 1. No home.
	var lines []string
	for s, name := range p.constrained {
		if p.min[s] < 1 || k.lastHolder[s] >= 0 {
			continue
		}
		var why []string
		for _, c := range candidates(s) {
			if r := p.exclusion(c, hws, imgs); r != "" && !slices.Contains(why, r) {
				why = append(why, r)
			}
		}
		text := "no node layout can hold it"
		if len(why) > 0 {
			text = "every node layout that can hold it is excluded by " + joinReasons(why)
		}
		lines = append(lines, fmt.Sprintf("%s: needs %s nodes, but %s", name, p.quantityText(s), text))
	}
	if len(lines) > 0 {
		return lines
	}
	// 2. Too few places.
	if m, ok := k.maxPlaceable(); ok && m < n {
		var caps []string
		for s, name := range p.constrained {
			if p.max[s] < inf {
				caps = append(caps, fmt.Sprintf("%s ≤ %d", name, p.max[s]))
			}
		}
		return []string{fmt.Sprintf("size: %d nodes requested, but at most %d can be placed (%s)", n, m, strings.Join(caps, ", "))}
	}
	// 3. Too many minimums.
	if m, ok := k.minNeeded(); ok && m > n {
		var mins []string
		for s, name := range p.constrained {
			if p.min[s] > 0 {
				mins = append(mins, fmt.Sprintf("%s ≥ %d", name, p.min[s]))
			}
		}
		return []string{fmt.Sprintf("size: %d nodes requested, but the service minimums need at least %d (%s)", n, m, strings.Join(mins, ", "))}
	}
	// 4. Contradiction: every layout holding a also holds b, and min_a > max_b.
	for a, an := range p.constrained {
		if p.min[a] == 0 {
			continue
		}
		for b, bn := range p.constrained {
			if a == b || p.min[a] <= p.max[b] {
				continue
			}
			always := k.lastHolder[a] >= 0
			for _, l := range k.ls {
				if l.m.has(a) && !l.m.has(b) {
					always = false
					break
				}
			}
			if always {
				return []string{fmt.Sprintf("%s: needs at least %d nodes, but every node layout that can hold it also holds %s, which allows at most %d", an, p.min[a], bn, p.max[b])}
			}
		}
	}
	// 5. Otherwise.
	var qs []string
	for s, name := range p.constrained {
		if p.min[s] > 0 || p.max[s] < inf {
			qs = append(qs, fmt.Sprintf("%s [%s]", name, p.quantityText(s)))
		}
	}
	return []string{fmt.Sprintf("no assignment of %d nodes satisfies the quantities of: %s", n, strings.Join(qs, ", "))}
}

func joinReasons(rs []string) string {
	// "cantcoexist [a b] and [c d]" reads better than repeating the rule name.
	var out []string
	prev := ""
	for _, r := range rs {
		rule, rest, ok := strings.Cut(r, " [")
		if ok && rule == prev {
			out = append(out, "["+rest)
			continue
		}
		prev = rule
		out = append(out, r)
	}
	if len(out) == 1 {
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

func budgetError(max int) *Error {
	return errorf(KindBudgetExhausted, "no layout found within %d search steps; pin hardwaretype/imagetype or reduce the number of constrained services", max)
}
