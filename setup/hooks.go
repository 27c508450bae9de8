package setup

import (
	"fmt"
	"slices"
	"time"
)

// The agents keep hooks in one shape: hooks.EVENT is a list of entries
// {matcher, hooks: [handler, ...]}, a handler {type, command, timeout,
// ...}. sluice owns the entries whose handlers are all sluice's.

// editHooks puts want (an entry) into hooks.EVENT of top in place of
// sluice's own entry (or last, when there is none), or with want nil
// takes sluice's handlers out, and the list and hooks when nothing else
// is left in them. It returns the index of sluice's entry.
func editHooks(d *doc, top node, event, agent string, want *object) (int, error) {
	var hooks, list node
	var err error
	if want == nil {
		var ok bool
		if hooks, ok = top.get("hooks"); !ok || hooks.object() == nil {
			return -1, nil
		}
		if list, ok = hooks.get(event); !ok || list.array() == nil {
			return -1, nil
		}
	} else {
		if hooks, err = d.child(top, "hooks"); err != nil {
			return -1, err
		}
		if list, err = d.list(hooks, event); err != nil {
			return -1, fmt.Errorf("hooks: %w", err)
		}
	}
	own := -1
	kept := 0
	d.drop(list, func(e node) bool {
		hs, ok := e.get("hooks")
		if !ok || hs.array() == nil {
			kept++
			return false
		}
		ours, all := 0, len(hs.elems())
		for _, h := range hs.elems() {
			if ho, ok := h.read().(*object); ok && isSluiceHook(ho.str("command"), agent) {
				ours++
			}
		}
		switch {
		case ours == 0:
		case ours == all && want != nil && own < 0:
			own = kept
			d.replace(e, want)
		case ours == all:
			return true
		default:
			d.drop(hs, func(h node) bool {
				ho, ok := h.read().(*object)
				return ok && isSluiceHook(ho.str("command"), agent)
			})
		}
		kept++
		return false
	})
	if want != nil {
		if own < 0 {
			d.add(list, want)
			own = len(list.elems()) - 1
		}
		return own, nil
	}
	if list.empty() {
		d.del(hooks, event)
	}
	if hooks.empty() {
		d.del(top, "hooks")
	}
	return -1, nil
}

// editList adds the strings want to key's list in o (those missing, in
// order), or with add false takes them out, and the list when nothing
// else is left in it.
func editList(d *doc, o node, key string, want []string, add bool) error {
	if add {
		l, err := d.list(o, key)
		if err != nil {
			return err
		}
		for _, w := range want {
			if !slices.ContainsFunc(l.elems(), func(e node) bool { return e.read() == w }) {
				d.add(l, w)
			}
		}
		return nil
	}
	l, ok := o.get(key)
	if !ok || l.array() == nil {
		return nil
	}
	d.drop(l, func(e node) bool {
		s, ok := e.read().(string)
		return ok && slices.Contains(want, s)
	})
	if l.empty() {
		d.del(o, key)
	}
	return nil
}

// hookEntry is a sluice hook found in an agent's settings.
type hookEntry struct {
	file    string
	scope   string // user, project, local, managed, system
	matcher string
	command string
	timeout time.Duration // 0: not set
	group   int           // its entry's index in the list
	handler int           // its index in the entry's hooks
}

// findHooks lists sluice's hooks for agent under event in a settings
// file's object; timeoutUnit is the unit of the agent's "timeout".
func findHooks(file, scope string, o *object, event, agent string, timeoutUnit time.Duration) []hookEntry {
	ho := o.obj("hooks")
	if ho == nil {
		return nil
	}
	entries, _ := ho.array(event)
	var out []hookEntry
	for gi, e := range entries {
		eo, ok := e.(*object)
		if !ok {
			continue
		}
		hs, _ := eo.array("hooks")
		for hi, h := range hs {
			hobj, ok := h.(*object)
			if !ok || !isSluiceHook(hobj.str("command"), agent) {
				continue
			}
			he := hookEntry{file: file, scope: scope, matcher: eo.str("matcher"), command: hobj.str("command"), group: gi, handler: hi}
			if t, ok := hobj.num("timeout"); ok {
				he.timeout = time.Duration(t * float64(timeoutUnit))
			}
			out = append(out, he)
		}
	}
	return out
}
