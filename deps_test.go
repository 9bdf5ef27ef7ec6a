package gpurent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is this module's path: the prefix of every package of it.
const module = "github.com/gpurent/gpurent"

// goListDeps answers what pkg depends on (go list -deps), itself included.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// checkForbidden fails for every package in pkgs that depends on one of
// forbidden (a package or, with its path as a prefix, one below it; a
// path ending in "$" is that package alone); why says what the rule is.
func checkForbidden(t *testing.T, pkgs, forbidden []string, why string) {
	t.Helper()
	for _, pkg := range pkgs {
		for _, dep := range goListDeps(t, pkg) {
			for _, f := range forbidden {
				exact, only := strings.CutSuffix(f, "$")
				if dep == exact || !only && strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s; %s", pkg, dep, why)
				}
			}
		}
	}
}

// TestDependenciesPointInward holds the layering of docs/ARCHITECTURE.md:
// the domain and the pure logic packages import no database, HTTP, container
// runtime or adapter package.
func TestDependenciesPointInward(t *testing.T) {
	pure := []string{
		".",
		"./internal/sched",
		"./internal/rental",
		"./internal/move",
		"./internal/fleet",
		"./internal/catalog",
		"./internal/agentproto",
		"./internal/apiv1",
		"./internal/gpu",
		"./internal/agent/runtime",
		"./internal/agent/pid1",
		"./internal/ledger",
		"./internal/rating",
		"./internal/pricing",
		"./internal/academic",
		"./internal/metering",
		"./internal/wallet",
		"./internal/sshkeys",
		"./internal/sla",
		"./internal/faultrules",
		"./internal/benchjudge",
		"./internal/certification",
		"./internal/transparency",
		"./internal/imageref",
		"./internal/imagecatalog",
		"./internal/egress",
		"./internal/ratelimit",
		"./internal/money",
		"./internal/keymutex",
		"./internal/agentreport",
	}
	forbidden := []string{
		"database/sql",
		"net/http",
		module + "/internal/store",
		module + "/internal/api",
		module + "/internal/app",
		module + "/internal/agent/runtime/docker",
		module + "/internal/agent/runtime/process",
		"github.com/jackc",
		"modernc.org/sqlite",
		"github.com/docker",
		"github.com/moby",
	}
	checkForbidden(t, pure, forbidden, "pure packages must not")
}

// services are the control plane's service packages: what only the control
// plane runs, and what adapters reach through the API rather than import.
var services = []string{
	module + "/internal/academic",
	module + "/internal/auth",
	module + "/internal/pricing",
	module + "/internal/certification",
	module + "/internal/fleet",
	module + "/internal/imagecatalog",
	module + "/internal/incident",
	module + "/internal/metering",
	module + "/internal/move",
	module + "/internal/rental",
	module + "/internal/sshkeys",
	module + "/internal/wallet",
}

// databases are the store's adapters and the drivers below them.
var databases = []string{
	module + "/internal/store",
	"github.com/jackc",
	"modernc.org/sqlite",
}

// TestAdaptersAndAgentDependencies holds the rules of the outer rings: the
// agent side never links the control plane; the CLI and the API client
// speak only the wire types; the console calls the services, never a
// database; the SSH gateway and the agent's SSH server are transport only.
func TestAdaptersAndAgentDependencies(t *testing.T) {
	controlPlane := slices.Concat(services, databases, []string{
		"database/sql",
		module + "/internal/api",
		module + "/internal/app",
		module + "/internal/console",
		module + "/internal/cli",
		module + "/internal/sshgate",
		module + "/internal/sshkeys",
	})
	checkForbidden(t, []string{"./internal/agent/...", "./internal/access"}, controlPlane,
		"the agent side runs on the host and reaches the control plane only over its API")

	checkForbidden(t, []string{"./internal/cli", "./internal/client"}, slices.Concat(services, databases, []string{
		"database/sql",
		module + "/internal/api",
		module + "/internal/app",
		module + "/internal/console",
		module + "/internal/agent",
		module + "/internal/sshgate",
		module + "/internal/access",
		"github.com/docker",
		"github.com/moby",
	}), "the CLI and the API client know the control plane by its wire types (apiv1) only")

	checkForbidden(t, []string{"./internal/console/..."}, slices.Concat(databases, []string{
		module + "/internal/api",
		module + "/internal/app",
		module + "/internal/cli",
		module + "/internal/agent/runtime/docker",
		module + "/internal/agent/runtime/process",
		"github.com/docker",
		"github.com/moby",
	}), "the console calls the services the API calls, never a store adapter or another adapter")

	rooms := []string{module + "/internal/console/customer", module + "/internal/console/operator"}
	checkForbidden(t, []string{"./internal/console/web"}, slices.Concat(services, rooms, []string{module + "/internal/console$"}),
		"the console's plumbing serves every room and calls no service")
	checkForbidden(t, []string{"./internal/console/customer"}, []string{module + "/internal/console/operator", module + "/internal/console$"},
		"the customer room never reaches into the operator's, nor into the console that mounts it")
	checkForbidden(t, []string{"./internal/console/operator"}, []string{module + "/internal/console/customer", module + "/internal/console$"},
		"the operator room never reaches into the customer's, nor into the console that mounts it")

	checkForbidden(t, []string{"./internal/sshgate"}, slices.Concat(services, databases, []string{
		"database/sql",
		module + "/internal/api",
		module + "/internal/app",
		module + "/internal/console",
		module + "/internal/agent",
	}), "the SSH gateway is transport: the app hands it what it checks")

	checkForbidden(t, []string{"./internal/api"}, slices.Concat(databases, []string{
		module + "/internal/app",
		module + "/internal/console",
		module + "/internal/cli",
		module + "/internal/agent/runtime/docker",
		module + "/internal/agent/runtime/process",
	}), "the API calls the services and a narrow store, never an adapter")
}

// TestMoveWorkflowDependencies holds the split of the move workflow
// from the instance lifecycle: the workflow (internal/move) is built on the
// lifecycle (internal/rental), which knows the workflow only by the
// interfaces it declares (rental.Moves), never by its package.
func TestMoveWorkflowDependencies(t *testing.T) {
	checkForbidden(t, []string{"./internal/rental"}, []string{module + "/internal/move"},
		"the lifecycle reaches the move workflow through rental.Moves, built by internal/graph")
	if !slices.Contains(goListDeps(t, "./internal/move"), module+"/internal/rental") {
		t.Error("internal/move does not import internal/rental: the workflow is built on the lifecycle's primitives")
	}
}

// maxNounMethods bounds one per-noun store contract: a noun that outgrows
// it is two nouns.
const maxNounMethods = 12

// TestQueriesIsOnlyPerNounContracts holds the store contract's shape
// (store.go): Queries declares no method of its own, only embeds per-noun
// contracts (each named ...Store, each declaring its methods and embedding
// nothing, none longer than maxNounMethods), and no method is in two nouns.
func TestQueriesIsOnlyPerNounContracts(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "store.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ifaces := map[string]*ast.InterfaceType{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if it, ok := ts.Type.(*ast.InterfaceType); ok {
				ifaces[ts.Name.Name] = it
			}
		}
	}
	q := ifaces["Queries"]
	if q == nil {
		t.Fatal("store.go declares no Queries interface")
	}
	owner := map[string]string{} // method → noun declaring it
	nouns := 0
	for _, fld := range q.Methods.List {
		id, ok := fld.Type.(*ast.Ident)
		if len(fld.Names) > 0 || !ok {
			what := types.ExprString(fld.Type)
			if len(fld.Names) > 0 {
				what = fld.Names[0].Name
			}
			t.Errorf("Queries declares %s itself (at %s); declare it in a per-noun contract and embed that",
				what, fset.Position(fld.Pos()))
			continue
		}
		noun := ifaces[id.Name]
		switch {
		case noun == nil:
			t.Errorf("Queries embeds %s, which is not an interface of store.go", id.Name)
			continue
		case !strings.HasSuffix(id.Name, "Store"):
			t.Errorf("Queries embeds %s: a per-noun contract is named for its noun, ...Store", id.Name)
		}
		nouns++
		n := 0
		for _, m := range noun.Methods.List {
			if len(m.Names) == 0 {
				t.Errorf("%s embeds %s: a per-noun contract declares its methods", id.Name, types.ExprString(m.Type))
				continue
			}
			for _, name := range m.Names {
				n++
				if o, dup := owner[name.Name]; dup {
					t.Errorf("%s is in both %s and %s", name.Name, o, id.Name)
				}
				owner[name.Name] = id.Name
			}
		}
		if n > maxNounMethods {
			t.Errorf("%s has %d methods, more than %d: split the noun", id.Name, n, maxNounMethods)
		}
	}
	if nouns == 0 {
		t.Error("Queries embeds no per-noun contract")
	}
}

// listedPackage is what go list -json says of a package, the fields used.
type listedPackage struct {
	ImportPath      string
	Dir             string
	Export          string
	CompiledGoFiles []string
	Imports         []string
	DepOnly         bool
}

// wholeStoreTakers are the packages allowed to hold the whole store: the
// wiring that opens it and hands each service its share (app opens it,
// graph builds the services from it), the rental and move tests' wiring,
// which builds them through graph, and the adapters and their conformance
// suite.
var wholeStoreTakers = []string{
	module + "/internal/app",
	module + "/internal/graph",
	module + "/internal/rental/rentaltest",
	module + "/internal/store",
}

// TestServicesTakeANarrowStore holds that no package outside
// wholeStoreTakers holds the whole store: no struct field, constructor
// (New..., new...) parameter or any function's Store parameter whose type
// has every method of gpurent.Queries. Each declares, on its side, the
// per-noun contracts it uses (a transaction's Queries, handed to an InTx
// callback and the helpers it calls, is not held). It type-checks the
// module's internal packages against the export data go list builds.
func TestServicesTakeANarrowStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-export", "-compiled", "-json=ImportPath,Dir,Export,CompiledGoFiles,Imports,DepOnly",
		"./internal/...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	var mine []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		held := slices.ContainsFunc(wholeStoreTakers, func(w string) bool {
			return p.ImportPath == w || strings.HasPrefix(p.ImportPath, w+"/")
		})
		if !p.DepOnly && !held && slices.Contains(p.Imports, module) {
			mine = append(mine, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(exports[path])
	})
	root, err := imp.Import(module)
	if err != nil {
		t.Fatal(err)
	}
	queries := root.Scope().Lookup("Queries").Type().Underlying().(*types.Interface)
	store := root.Scope().Lookup("Store").Type().Underlying().(*types.Interface)
	whole := func(typ types.Type) bool {
		if p, ok := typ.(*types.Pointer); ok {
			typ = p.Elem()
		}
		return types.Implements(typ, queries)
	}
	checked := map[string]bool{}
	for _, p := range mine {
		var files []*ast.File
		for _, name := range p.CompiledGoFiles {
			if !filepath.IsAbs(name) {
				name = filepath.Join(p.Dir, name)
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		conf := types.Config{Importer: imp}
		pkg, err := conf.Check(p.ImportPath, fset, files, nil)
		if err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		checked[p.ImportPath] = true
		scope := pkg.Scope()
		params := func(where string, sig *types.Signature, ctor bool) {
			for v := range sig.Params().Variables() {
				if whole(v.Type()) && (ctor || types.Implements(v.Type(), store)) {
					t.Errorf("%s: %s takes the whole store (%s %s); declare the contracts it uses",
						p.ImportPath, where, v.Name(), types.TypeString(v.Type(), nil))
				}
			}
		}
		for _, name := range scope.Names() {
			switch obj := scope.Lookup(name).(type) {
			case *types.Func:
				ctor := strings.HasPrefix(name, "New") || strings.HasPrefix(name, "new")
				params(name, obj.Signature(), ctor)
			case *types.TypeName:
				named, ok := obj.Type().(*types.Named)
				if !ok {
					continue
				}
				if st, ok := named.Underlying().(*types.Struct); ok {
					for fld := range st.Fields() {
						if whole(fld.Type()) {
							t.Errorf("%s: field %s.%s holds the whole store (%s); declare the contracts it uses",
								p.ImportPath, name, fld.Name(), types.TypeString(fld.Type(), nil))
						}
					}
				}
				for m := range named.Methods() {
					params(name+"."+m.Name(), m.Signature(), false)
				}
			}
		}
	}
	if len(checked) == 0 {
		t.Fatal("no package checked: the go list filter matched none")
	}
	// Every service (the move workflow among them) is one of those checked.
	for _, svc := range services {
		if !checked[svc] {
			t.Errorf("%s was not type-checked: the go list filter missed a service", svc)
		}
	}
}

// TestArchitectureMapIsComplete holds docs/ARCHITECTURE.md's map to the
// tree: every package of the module is on it, and nothing on it is gone.
func TestArchitectureMapIsComplete(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## The map")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no section \"The map\"")
	}
	_, block, ok := strings.Cut(after, "```\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("the map of docs/ARCHITECTURE.md is not in a code block")
	}
	// A package's line starts with its path (under internal/, indented by
	// two spaces; cmd/ and bench/ at the margin); the rest describes it.
	mapped := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			mapped[module+"/internal/"+f[0]] = true
		case strings.HasPrefix(f[0], "cmd/"):
			mapped[module+"/"+f[0]] = true
		case f[0] == "gpurent" && len(f) > 1 && f[1] == "(root)":
			mapped[module] = true
		}
	}
	out, err := exec.Command("go", "list", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if !mapped[pkg] {
			t.Errorf("package %s is not on the map of docs/ARCHITECTURE.md: add a line saying what it holds", pkg)
		}
		delete(mapped, pkg)
	}
	for pkg := range mapped {
		t.Errorf("docs/ARCHITECTURE.md maps %s, which is no package of the tree", pkg)
	}
}
