//go:build cgo

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestExportsNameThemselves holds every export to one op name: the one
// hub.h gives the call (a _call export is its inline function's), passed
// to onHub and beginning every error message the export writes, so that a
// copied export cannot report another's name. It also holds the exports to
// hub.h's declarations, both ways.
func TestExportsNameThemselves(t *testing.T) {
	if os.Getenv("TEST_SRCDIR") != "" {
		t.Skip("under Bazel: the sources it reads are go test's (CI runs it there)")
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	exported := map[string]bool{}
	opMsg := regexp.MustCompile(`^"(gs_hub_[a-z_]+):`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "_testing.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !isExport(fn) {
				continue
			}
			name := fn.Name.Name
			exported[name] = true
			op := strings.TrimSuffix(strings.TrimSuffix(name, "_call"), "_go")
			onHubs := 0
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "onHub" {
						onHubs++
						if lit, ok := n.Args[0].(*ast.BasicLit); !ok || lit.Value != strconv.Quote(op) {
							t.Errorf("%s: %s calls onHub(%s, ...), want %q", fset.Position(n.Pos()), name, types(n.Args[0]), op)
						}
					}
				case *ast.BasicLit:
					if m := opMsg.FindStringSubmatch(n.Value); m != nil && m[1] != op {
						t.Errorf("%s: %s writes a message of %s", fset.Position(n.Pos()), name, m[1])
					}
				}
				return true
			})
			// gs_hub_last_error reads hub 0's message for a bad handle, and
			// gs_hub_close ends the hub that onHub would keep open.
			if hubArg(fn) && onHubs != 1 && op != "gs_hub_last_error" && op != "gs_hub_close" {
				t.Errorf("%s takes a hub handle but calls onHub %d times, want once", name, onHubs)
			}
		}
	}
	// hub.h declares each export once (the inline functions are not
	// exports), exports.h the Go sides of fork.c's two that answer in a
	// child themselves, and spanpath.h the private ones spanpath.c calls;
	// the C functions the package defines (fork.c's and spanpath.c's)
	// count as exports.
	decl := regexp.MustCompile(`(?m)^(?:const )?[a-z_0-9]+\*? (gs_(?:hub|sp)_[a-z_]+)\(`)
	declared := map[string]bool{}
	for _, f := range []string{"include/gpuspans/hub.h", "exports.h", "spanpath.h"} {
		h, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(h), -1) {
			declared[m[1]] = true
		}
	}
	cfiles, err := filepath.Glob("*.c")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cfiles {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^(?:const )?[a-z_0-9]+\*? (gs_hub_[a-z_]+)\(.*\{$`).FindAllStringSubmatch(string(src), -1) {
			exported[m[1]] = true
		}
	}
	// exports_list.h lists the exports fork.c defines and exports.h
	// declares the Go sides of: each name is an export, and its Go name a
	// declaration.
	list, err := os.ReadFile("exports_list.h")
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`(?m)^  X\((PID|FLAG), (STATUS|TOKEN), (gs_hub_status|uint64_t), (gs_hub_[a-z_]+), (gs_hub_[a-z_]+), \(`)
	listed := entry.FindAllStringSubmatch(string(list), -1)
	if len(listed) < 30 {
		t.Fatalf("read %d entries from exports_list.h: the pattern no longer matches", len(listed))
	}
	for _, m := range listed {
		name, goName := m[4], m[5]
		if exported[name] {
			t.Errorf("%s is defined in a .c file and listed in exports_list.h", name)
		}
		exported[name] = true
		declared[goName] = true
		if goName != strings.TrimSuffix(name, "_call")+"_go" {
			t.Errorf("exports_list.h: %s's Go side is %s, want %s_go", name, goName, strings.TrimSuffix(name, "_call"))
		}
		if (m[3] == "uint64_t") != (m[2] == "TOKEN") {
			t.Errorf("exports_list.h: %s returns %s but is refused with %s", name, m[3], m[2])
		}
	}
	if len(declared) < 30 {
		t.Fatalf("read %d declarations from hub.h: the pattern no longer matches", len(declared))
	}
	for _, set := range [][2]map[string]bool{{declared, exported}, {exported, declared}} {
		var missing []string
		for n := range set[0] {
			if !set[1][n] {
				missing = append(missing, n)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("only one of hub.h and the exports has %v", missing)
		}
	}
}

// isExport reports whether fn has a cgo export directive (which
// CommentGroup.Text leaves out).
func isExport(fn *ast.FuncDecl) bool {
	if fn.Doc == nil {
		return false
	}
	for _, c := range fn.Doc.List {
		if c.Text == "//export "+fn.Name.Name {
			return true
		}
	}
	return false
}

// hubArg reports whether fn's first parameter is a hub handle.
func hubArg(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) == 0 || len(ps[0].Names) == 0 || ps[0].Names[0].Name != "handle" {
		return false
	}
	sel, ok := ps[0].Type.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "gs_hub"
}

func types(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok {
		return lit.Value
	}
	return "a non-literal"
}
