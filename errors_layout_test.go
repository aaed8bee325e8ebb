package adapter_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSentinelsLayout: each package declares the sentinels it exports in
// its errors.go, with a doc comment; the root's texts carry no "adapter: "
// prefix (the error that reports one does), nor do signature's (its
// *FieldError does); predict's begin with "predict: ".
func TestSentinelsLayout(t *testing.T) {
	for dir, prefix := range map[string]string{".": "", "predict": "predict: ", "types": "", "signature": ""} {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		require.NoError(t, err)
		for _, pkg := range pkgs {
			for file, f := range pkg.Files {
				for _, d := range f.Decls {
					g, ok := d.(*ast.GenDecl)
					if !ok || g.Tok != token.VAR {
						continue
					}
					for _, s := range g.Specs {
						v := s.(*ast.ValueSpec)
						for i, n := range v.Names {
							if !n.IsExported() || !strings.HasPrefix(n.Name, "Err") {
								continue
							}
							assert.True(t, strings.HasSuffix(file, "/errors.go") || file == "errors.go", "%s declared in %s, not errors.go", n.Name, file)
							assert.True(t, v.Doc != nil || (len(g.Specs) == 1 && g.Doc != nil), "%s has no doc comment", n.Name)
							if i >= len(v.Values) {
								continue
							}
							call, ok := v.Values[i].(*ast.CallExpr)
							if !ok || len(call.Args) != 1 {
								continue // another package's sentinel
							}
							lit, ok := call.Args[0].(*ast.BasicLit)
							if !ok {
								continue
							}
							text, _ := strconv.Unquote(lit.Value)
							assert.False(t, strings.HasPrefix(text, "adapter:"), "%s: %q", n.Name, text)
							if dir == "signature" {
								assert.False(t, strings.HasPrefix(text, "signature:"), "%s: %q", n.Name, text)
							}
							if prefix != "" {
								assert.True(t, strings.HasPrefix(text, prefix), "%s: %q", n.Name, text)
							}
						}
					}
				}
			}
		}
	}
}
