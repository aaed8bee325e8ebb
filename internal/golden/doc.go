// Package golden loads the DSPy golden cases and the malformed-completion
// corpus (testdata/*.json) and builds Go signatures and values from their
// type language, so that tests are driven by the data and keep working on
// cases they were not written against.
//
// The type language (DSPy reference §14): str int float bool Any NoneType
// list[T] dict[K,V] Optional[T] Union[A,B] Literal[...], "Enum Name(A=a,B=b)",
// "object Name{field:T, field:T#"description", field:T=<json default>}" (Name
// may be absent), and custom names (Image, Tool, Code['python'], ...) that the
// caller maps to Go types.
//
// Models become reflect.StructOf types and enums take a slot in a pool of
// named string types; both are given their DSPy names through
// signature.WithTypes, which is also how a user names a custom type.
package golden
