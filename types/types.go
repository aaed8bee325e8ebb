package types

import "reflect"

// Names returns DSPy's custom type names mapped to the Go types of this
// package, for signature.WithTypes. "Code" is Code (Python);
// "Code['python']" and the like are CodeOf instantiations. The map is new
// on every call.
func Names() map[string]reflect.Type {
	return map[string]reflect.Type{
		"Image":              reflect.TypeFor[Image](),
		"Audio":              reflect.TypeFor[Audio](),
		"File":               reflect.TypeFor[File](),
		"History":            reflect.TypeFor[History](),
		"Reasoning":          reflect.TypeFor[Reasoning](),
		"Tool":               reflect.TypeFor[Tool](),
		"ToolCalls":          reflect.TypeFor[ToolCalls](),
		"Citations":          reflect.TypeFor[Citations](),
		"Document":           reflect.TypeFor[Document](),
		"Code":               reflect.TypeFor[Code](),
		"Code['python']":     reflect.TypeFor[CodeOf[Python]](),
		"Code['go']":         reflect.TypeFor[CodeOf[Go]](),
		"Code['java']":       reflect.TypeFor[CodeOf[Java]](),
		"Code['javascript']": reflect.TypeFor[CodeOf[JavaScript]](),
		"Code['sql']":        reflect.TypeFor[CodeOf[SQL]](),
	}
}
