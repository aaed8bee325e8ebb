package value

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// bullets reads a markdown list ("- a", "* a", "1. a", "1) a"), one item
// per line; every non-blank line must be an item.
func bullets(raw string) ([]string, bool) {
	var items []string
	for line := range strings.Lines(raw) {
		l := strings.TrimSpace(line)
		if l == "" {
			continue
		}
		item, ok := bulletItem(l)
		if !ok {
			return nil, false
		}
		items = append(items, item)
	}
	return items, len(items) > 0
}

func bulletItem(l string) (string, bool) {
	for _, p := range [...]string{"- ", "* ", "+ ", "• "} {
		if strings.HasPrefix(l, p) {
			return strings.TrimSpace(l[len(p):]), true
		}
	}
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' ' {
		return strings.TrimSpace(l[i+2:]), true
	}
	return "", false
}

// singleItem reads a lone scalar given for a list ("sql" for list[str]) as
// the list's one item. A line with a comma or semicolon is refused for
// text items: one item or several, the text does not say; so is a text
// that states no item (see noItem).
func singleItem(raw string, elem *signature.TypeSpec) (string, bool) {
	s := strings.TrimSpace(raw)
	if s == "" || strings.ContainsAny(s, "\n[]{}") {
		return "", false
	}
	switch elem.Kind() {
	case signature.KindString, signature.KindEnum, signature.KindLiteral:
		if strings.ContainsAny(s, ",;") || noItem(s) {
			return "", false
		}
	case signature.KindInt, signature.KindFloat, signature.KindBool:
	default:
		return "", false
	}
	return s, true
}

func listFromText(items []string, spec *signature.TypeSpec, depth int, b *jsonx.Budget) (reflect.Value, error) {
	t := spec.GoType()
	out := reflect.MakeSlice(t, 0, len(items))
	lists := itemsAreLists(spec.Elem())
	for i, it := range items {
		if lists {
			if err := loneItem(it, spec.Elem()); err != nil {
				return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
			}
		}
		v, err := parseText(it, spec.Elem(), depth+1, b)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
		}
		out = reflect.Append(out, v)
	}
	return out, nil
}

// itemsAreLists reports a list item type that is a list (or an optional
// one), whose items loneItem checks.
func itemsAreLists(elem *signature.TypeSpec) bool {
	if elem.Kind() == signature.KindOptional {
		elem = elem.Elem()
	}
	return elem.Kind() == signature.KindList
}

// loneItem refuses a scalar given as an item of a list whose items are
// lists (see itemsAreLists). A lone scalar is a list's one item only where
// it is a value of its own (a field's, a dict member's, a struct
// member's): as an item of a list it says the list is flat, and [1, 2]
// read as list[list[int]] would be the invented [[1], [2]] — the value an
// inner fragment of a corrupted [[1, 2], [3, x]] also made. v is a decoded
// item or a bullet's text.
func loneItem(v any, elem *signature.TypeSpec) error {
	list := elem
	if list.Kind() == signature.KindOptional {
		list = list.Elem()
	}
	switch x := v.(type) {
	case json.Number, bool:
	case string:
		if _, ok := singleItem(x, list.Elem()); !ok || list != elem && isNone(x) {
			return nil
		}
	default:
		return nil
	}
	return invalid("%s is not %s: a list's item must be a list here", clip(pyjson.Repr(v)), WithArticle(list.String()))
}
