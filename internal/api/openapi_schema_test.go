package api

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/sla"
)

// wireTypes maps each component schema of openapi.json to the Go type the
// server encodes or decodes for it: the apiv1 types under their own names,
// the agents' protocol types, and the few the api package or the sla terms
// answer with.
func wireTypes() map[string]reflect.Type {
	return map[string]reflect.Type{
		"AcademicApplication":     reflect.TypeFor[apiv1.AcademicApplication](),
		"BaseImage":               reflect.TypeFor[apiv1.BaseImage](),
		"BaseImageList":           reflect.TypeFor[apiv1.BaseImageList](),
		"PutBaseImageRequest":     reflect.TypeFor[apiv1.PutBaseImageRequest](),
		"SetPrepullRequest":       reflect.TypeFor[apiv1.SetPrepullRequest](),
		"AcademicApplicationList": reflect.TypeFor[apiv1.AcademicApplicationList](),
		"AcademicApplyRequest":    reflect.TypeFor[apiv1.AcademicApplyRequest](),
		"AcademicAuditEntry":      reflect.TypeFor[apiv1.AcademicAuditEntry](),
		"AcademicDecision":        reflect.TypeFor[apiv1.AcademicDecision](),
		"AccessSession":           reflect.TypeFor[apiv1.AccessSession](),
		"Account":                 reflect.TypeFor[apiv1.Account](),
		"AccountEvent":            reflect.TypeFor[apiv1.AccountEvent](),
		"AccountEvents":           reflect.TypeFor[apiv1.AccountEvents](),
		"AddPriceVersionRequest":  reflect.TypeFor[apiv1.AddPriceVersionRequest](),
		"AddSSHKeyRequest":        reflect.TypeFor[apiv1.AddSSHKeyRequest](),
		"BenchJob":                reflect.TypeFor[apiv1.BenchJob](),
		"BenchJobResult":          reflect.TypeFor[apiv1.BenchJobResult](),
		"BenchRunRequest":         reflect.TypeFor[apiv1.BenchRunRequest](),
		"BenchRunResponse":        reflect.TypeFor[apiv1.BenchRunResponse](),
		"CertSettings":            reflect.TypeFor[apiv1.CertSettings](),
		"ChangePlanRequest":       reflect.TypeFor[apiv1.ChangePlanRequest](),
		"ChangePlanResult":        reflect.TypeFor[apiv1.ChangePlanResult](),
		"CordonGPURequest":        reflect.TypeFor[apiv1.CordonGPURequest](),
		"CreateInstanceRequest":   reflect.TypeFor[apiv1.CreateInstanceRequest](),
		"CreateJoinTokenRequest":  reflect.TypeFor[apiv1.CreateJoinTokenRequest](),
		"CreatePaymentRequest":    reflect.TypeFor[apiv1.CreatePaymentRequest](),
		"CreateTokenRequest":      reflect.TypeFor[apiv1.CreateTokenRequest](),
		"CreateVoucherRequest":    reflect.TypeFor[apiv1.CreateVoucherRequest](),
		"CreatedJoinToken":        reflect.TypeFor[apiv1.CreatedJoinToken](),
		"CreditLot":               reflect.TypeFor[apiv1.CreditLot](),
		"CreditRequest":           reflect.TypeFor[apiv1.CreditRequest](),
		"DegradedAvailability":    reflect.TypeFor[apiv1.DegradedAvailability](),
		"Event":                   reflect.TypeFor[apiv1.Event](),
		"SetStartupRequest":       reflect.TypeFor[apiv1.SetStartupRequest](),
		"SetStartupResult":        reflect.TypeFor[apiv1.SetStartupResult](),
		"StartupStatus":           reflect.TypeFor[apiv1.StartupStatus](),
		"FailoverRequest":         reflect.TypeFor[apiv1.FailoverRequest](),
		"FailoverResult":          reflect.TypeFor[apiv1.FailoverResult](),
		"Fault":                   reflect.TypeFor[apiv1.Fault](),
		"GPUCert":                 reflect.TypeFor[apiv1.GPUCert](),
		"GPUEvent":                reflect.TypeFor[apiv1.GPUEvent](),
		"GPUHealth":               reflect.TypeFor[apiv1.GPUHealth](),
		"GPUHealthList":           reflect.TypeFor[apiv1.GPUHealthList](),
		"GPUSample":               reflect.TypeFor[apiv1.GPUSample](),
		"GPUType":                 reflect.TypeFor[apiv1.GPUType](),
		"GPUTypeList":             reflect.TypeFor[apiv1.GPUTypeList](),
		"Host":                    reflect.TypeFor[apiv1.Host](),
		"HostGPU":                 reflect.TypeFor[apiv1.HostGPU](),
		"HostList":                reflect.TypeFor[apiv1.HostList](),
		"HostReset":               reflect.TypeFor[apiv1.HostReset](),
		"HostResetRequest":        reflect.TypeFor[apiv1.HostResetRequest](),
		"HourPrice":               reflect.TypeFor[apiv1.HourPrice](),
		"Incident":                reflect.TypeFor[apiv1.Incident](),
		"IncidentEntry":           reflect.TypeFor[apiv1.IncidentEntry](),
		"IncidentList":            reflect.TypeFor[apiv1.IncidentList](),
		"Instance":                reflect.TypeFor[apiv1.Instance](),
		"InstanceAccess":          reflect.TypeFor[apiv1.InstanceAccess](),
		"InstanceIncidents":       reflect.TypeFor[apiv1.InstanceIncidents](),
		"InstanceList":            reflect.TypeFor[apiv1.InstanceList](),
		"JoinToken":               reflect.TypeFor[apiv1.JoinToken](),
		"JoinTokenList":           reflect.TypeFor[apiv1.JoinTokenList](),
		"LedgerEntry":             reflect.TypeFor[apiv1.LedgerEntry](),
		"LedgerEntryList":         reflect.TypeFor[apiv1.LedgerEntryList](),
		"LedgerPosting":           reflect.TypeFor[apiv1.LedgerPosting](),
		"LoginRequest":            reflect.TypeFor[apiv1.LoginRequest](),
		"LoginResponse":           reflect.TypeFor[apiv1.LoginResponse](),
		"MigrateRequest":          reflect.TypeFor[apiv1.MigrateRequest](),
		"Operation":               reflect.TypeFor[apiv1.Operation](),
		"OperationDetail":         reflect.TypeFor[apiv1.OperationDetail](),
		"OperationList":           reflect.TypeFor[apiv1.OperationList](),
		"OperationSource":         reflect.TypeFor[apiv1.OperationSource](),
		"OperationTarget":         reflect.TypeFor[apiv1.OperationTarget](),
		"Payment":                 reflect.TypeFor[apiv1.Payment](),
		"PaymentCallbackResponse": reflect.TypeFor[apiv1.PaymentCallbackResponse](),
		"PlanChange":              reflect.TypeFor[apiv1.PlanChange](),
		"PlanHistory":             reflect.TypeFor[apiv1.PlanHistory](),
		"PortLink":                reflect.TypeFor[apiv1.PortLink](),
		"PriceVersion":            reflect.TypeFor[apiv1.PriceVersion](),
		"PriceVersionList":        reflect.TypeFor[apiv1.PriceVersionList](),
		"Prices":                  reflect.TypeFor[apiv1.Prices](),
		"Problem":                 reflect.TypeFor[apiv1.Problem](),
		"Quote":                   reflect.TypeFor[apiv1.Quote](),
		"QuoteLine":               reflect.TypeFor[apiv1.QuoteLine](),
		"QuotePackage":            reflect.TypeFor[apiv1.QuotePackage](),
		"QuotePlan":               reflect.TypeFor[apiv1.QuotePlan](),
		"RedeemVoucherRequest":    reflect.TypeFor[apiv1.RedeemVoucherRequest](),
		"RegisterRequest":         reflect.TypeFor[apiv1.RegisterRequest](),
		"RepairGPURequest":        reflect.TypeFor[apiv1.RepairGPURequest](),
		"Revenue":                 reflect.TypeFor[apiv1.Revenue](),
		"RevenueDay":              reflect.TypeFor[apiv1.RevenueDay](),
		"SSHKey":                  reflect.TypeFor[apiv1.SSHKey](),
		"SetSpendLimitsRequest":   reflect.TypeFor[apiv1.SetSpendLimitsRequest](),
		"SetWebhookRequest":       reflect.TypeFor[apiv1.SetWebhookRequest](),
		"SetZoneProbeRequest":     reflect.TypeFor[apiv1.SetZoneProbeRequest](),
		"SettlePaymentRequest":    reflect.TypeFor[apiv1.SettlePaymentRequest](),
		"SpendLimits":             reflect.TypeFor[apiv1.SpendLimits](),
		"StartRequest":            reflect.TypeFor[apiv1.StartRequest](),
		"StartResult":             reflect.TypeFor[apiv1.StartResult](),
		"Statement":               reflect.TypeFor[apiv1.Statement](),
		"StatementLine":           reflect.TypeFor[apiv1.StatementLine](),
		"Token":                   reflect.TypeFor[apiv1.Token](),
		"Transparency":            reflect.TypeFor[apiv1.Transparency](),
		"TransparencyFigure":      reflect.TypeFor[apiv1.TransparencyFigure](),
		"TransparencyGPU":         reflect.TypeFor[apiv1.TransparencyGPU](),
		"TransparencyGPUBrief":    reflect.TypeFor[apiv1.TransparencyGPUBrief](),
		"TransparencyHistory":     reflect.TypeFor[apiv1.TransparencyHistory](),
		"TransparencyHost":        reflect.TypeFor[apiv1.TransparencyHost](),
		"TransparencyProbe":       reflect.TypeFor[apiv1.TransparencyProbe](),
		"TransparencyResult":      reflect.TypeFor[apiv1.TransparencyResult](),
		"TransparencyType":        reflect.TypeFor[apiv1.TransparencyType](),
		"UpgradePlan":             reflect.TypeFor[apiv1.UpgradePlan](),
		"UpgradeRequest":          reflect.TypeFor[apiv1.UpgradeRequest](),
		"UpgradeShape":            reflect.TypeFor[apiv1.UpgradeShape](),
		"VerifyRequest":           reflect.TypeFor[apiv1.VerifyRequest](),
		"Volume":                  reflect.TypeFor[apiv1.Volume](),
		"Voucher":                 reflect.TypeFor[apiv1.Voucher](),
		"VoucherRedemption":       reflect.TypeFor[apiv1.VoucherRedemption](),
		"Wallet":                  reflect.TypeFor[apiv1.Wallet](),
		"Zone":                    reflect.TypeFor[apiv1.Zone](),
		"ZoneAvailability":        reflect.TypeFor[apiv1.ZoneAvailability](),
		"ZoneList":                reflect.TypeFor[apiv1.ZoneList](),

		"ActualInstance":        reflect.TypeFor[agentproto.ActualInstance](),
		"AgentStartupStatus":    reflect.TypeFor[agentproto.StartupStatus](),
		"AgentBenchResult":      reflect.TypeFor[agentproto.BenchResult](),
		"AgentGPUInfo":          reflect.TypeFor[agentproto.GPUInfo](),
		"AgentRegisterRequest":  reflect.TypeFor[agentproto.RegisterRequest](),
		"AgentRegisterResponse": reflect.TypeFor[agentproto.RegisterResponse](),
		"Desired":               reflect.TypeFor[agentproto.Desired](),
		"AgentRegistry":         reflect.TypeFor[agentproto.Registry](),
		"AgentHeldImages":       reflect.TypeFor[agentproto.HeldImages](),
		"DesiredInstance":       reflect.TypeFor[agentproto.DesiredInstance](),
		"Report":                reflect.TypeFor[agentproto.Report](),
		"ReportResponse":        reflect.TypeFor[agentproto.ReportResponse](),

		"AgentMove":         reflect.TypeFor[agentproto.Move](),
		"AgentMoveStatus":   reflect.TypeFor[agentproto.MoveStatus](),
		"AgentBenchJob":     reflect.TypeFor[agentproto.BenchJob](),
		"AgentBenchOptions": reflect.TypeFor[agentproto.BenchOptions](),
		"AgentRunEvent":     reflect.TypeFor[agentproto.RunEvent](),
		"AgentHealthEvent":  reflect.TypeFor[agentproto.HealthEvent](),
		"AgentGPUSample":    reflect.TypeFor[agentproto.GPUSample](),

		"Status":   reflect.TypeFor[statusResponse](),
		"SLATerms": reflect.TypeFor[sla.Terms](),
		"SLATier":  reflect.TypeFor[sla.Tier](),
	}
}

// unmappedSchemas are the component schemas with no Go type to compare,
// each with the reason.
func unmappedSchemas() map[string]string {
	return map[string]string{
		"PriceList": "the price list document is billing's own (an unexported type, encoded by billing.EncodeVersion; billing's tests hold it)",
	}
}

// undocumentedWireTypes are the exported apiv1 types the document need not
// describe, each with the reason.
func undocumentedWireTypes() map[string]string {
	return map[string]string{
		"HostStateRequest": "no route decodes or answers it: cordon, uncordon and drain take no body",
	}
}

// TestOpenAPISchemasMatchWireTypes compares, field by field, every schema
// of openapi.json with the Go type it describes: property names are the
// json tags, a field that may be left out (omitempty, omitzero) is not
// required and every other one is, and each property's type follows the
// field's (string, integer with format int64 for 64-bit integers, number,
// boolean, array, object, time.Time as a date-time string, nested structs
// inline or by $ref). Every apiv1 type is in the table, and every schema.
func TestOpenAPISchemasMatchWireTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	if len(schemas) == 0 {
		t.Fatal("openapi.json has no component schemas")
	}
	types, unmapped := wireTypes(), unmappedSchemas()
	for name := range schemas {
		if types[name] == nil && unmapped[name] == "" {
			t.Errorf("schema %s has no Go type in wireTypes: add it, or say in unmappedSchemas why not", name)
		}
	}
	undocumented := undocumentedWireTypes()
	for _, name := range exportedStructs(t, filepath.Join("..", "apiv1")) {
		_, inTable := types[name]
		if !inTable && undocumented[name] == "" {
			t.Errorf("apiv1.%s is not in openapi.json: add a schema and a wireTypes entry, or say in undocumentedWireTypes why not", name)
		}
	}
	c := &schemaCheck{t: t, schemas: schemas, seen: map[string]bool{}}
	requestOnly := requestOnlySchemas(doc)
	names := make([]string, 0, len(types))
	for name := range types {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s, ok := schemas[name].(map[string]any)
		if !ok {
			t.Errorf("wireTypes names schema %s, which openapi.json lacks", name)
			continue
		}
		c.compare(name, types[name], s, requestOnly[name])
	}
}

// requestOnlySchemas are the component schemas that only request bodies
// use: no answer, nor any schema an answer uses, refers to them.
func requestOnlySchemas(doc map[string]any) map[string]bool {
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	// reach adds to set every component schema v refers to, transitively.
	var reach func(v any, set map[string]bool)
	reach = func(v any, set map[string]bool) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok && !set[name] {
					set[name] = true
					reach(schemas[name], set)
				}
			}
			for _, c := range x {
				reach(c, set)
			}
		case []any:
			for _, c := range x {
				reach(c, set)
			}
		}
	}
	requests, answers := map[string]bool{}, map[string]bool{}
	reach(components["responses"], answers)
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			o, _ := op.(map[string]any)
			reach(o["requestBody"], requests)
			reach(o["responses"], answers)
		}
	}
	out := map[string]bool{}
	for name := range requests {
		if !answers[name] {
			out[name] = true
		}
	}
	return out
}

// exportedStructs lists the exported struct types declared in the Go
// files of dir (tests excluded).
func exportedStructs(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() {
					out = append(out, ts.Name.Name)
				}
			}
		}
	}
	return out
}

// schemaCheck compares Go types with the document's schemas.
type schemaCheck struct {
	t       *testing.T
	schemas map[string]any
	// seen holds the (Go type, schema name) pairs already compared, so a
	// schema referred to from many places is compared once per type.
	seen map[string]bool
}

// jsonField is one property a struct encodes as.
type jsonField struct {
	name     string
	typ      reflect.Type
	optional bool // the encoder may leave it out
}

// jsonFields lists the properties encoding/json writes for struct type t,
// the fields of embedded structs without a tag included.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && !hasTag {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, jsonFields(et)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optList := strings.Split(opts, ",")
		optional := slices.Contains(optList, "omitzero")
		if slices.Contains(optList, "omitempty") {
			switch ft.Kind() {
			case reflect.Struct:
				// omitempty never leaves a struct out.
			case reflect.Array:
				optional = optional || ft.Len() == 0
			default:
				optional = true
			}
		}
		if slices.Contains(optList, "string") {
			ft = reflect.TypeFor[string]()
		}
		out = append(out, jsonField{name: name, typ: ft, optional: optional})
	}
	return out
}

// resolve follows $ref, reads past a oneOf of one schema and null, and
// merges an allOf; ref is the component it came to, if any.
func (c *schemaCheck) resolve(where string, s map[string]any) (out map[string]any, ref string) {
	for range 8 {
		if r, ok := s["$ref"].(string); ok {
			name, found := strings.CutPrefix(r, "#/components/schemas/")
			next, isMap := c.schemas[name].(map[string]any)
			if !found || !isMap {
				c.t.Errorf("%s: $ref %s is not a component schema", where, r)
				return map[string]any{}, ""
			}
			s, ref = next, name
			continue
		}
		if alts, ok := s["oneOf"].([]any); ok {
			var kept []any
			for _, a := range alts {
				if m, _ := a.(map[string]any); m["type"] != "null" {
					kept = append(kept, a)
				}
			}
			if m, ok := kept[0].(map[string]any); len(kept) == 1 && ok {
				s = m
				continue
			}
			c.t.Errorf("%s: a oneOf other than one schema or null", where)
			return s, ref
		}
		if parts, ok := s["allOf"].([]any); ok {
			merged := map[string]any{"type": "object"}
			props, required := map[string]any{}, []any{}
			for _, p := range parts {
				pm, _ := p.(map[string]any)
				ps, _ := c.resolve(where, pm)
				for k, v := range objectProps(ps) {
					props[k] = v
				}
				req, _ := ps["required"].([]any)
				required = append(required, req...)
			}
			merged["properties"], merged["required"] = props, required
			return merged, ref
		}
		return s, ref
	}
	c.t.Errorf("%s: $ref chain too long", where)
	return s, ref
}

// objectProps is an object schema's properties.
func objectProps(s map[string]any) map[string]any {
	p, _ := s["properties"].(map[string]any)
	return p
}

// schemaType is the schema's one JSON type other than null ("" if none).
func schemaType(s map[string]any) string {
	switch v := s["type"].(type) {
	case string:
		return v
	case []any:
		for _, x := range v {
			if x != "null" {
				return fmt.Sprint(x)
			}
		}
	}
	return ""
}

// compare holds schema s to Go type t; where names the property. In a
// request body (request) a property the server defaults need not be
// required although Go's decoding tolerates its absence either way.
func (c *schemaCheck) compare(where string, t reflect.Type, s map[string]any, request bool) {
	s, ref := c.resolve(where, s)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if ref != "" {
		key := fmt.Sprint(t, " ", ref, " ", request)
		if c.seen[key] {
			return
		}
		c.seen[key] = true
	}
	got := schemaType(s)
	want := func(typ string) bool {
		if got != typ {
			c.t.Errorf("%s: Go %s is %s, the document says %q", where, t, typ, got)
			return false
		}
		return true
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		if want("string") && s["format"] != "date-time" {
			c.t.Errorf("%s: Go time.Time is a date-time string, the document's format is %v", where, s["format"])
		}
		return
	case t == reflect.TypeFor[json.RawMessage](), t.Kind() == reflect.Interface:
		return // any JSON value
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		want("string")
		return
	}
	switch t.Kind() {
	case reflect.String:
		want("string")
	case reflect.Bool:
		want("boolean")
	case reflect.Int64, reflect.Uint64:
		if want("integer") && s["format"] != "int64" {
			c.t.Errorf("%s: Go %s is a 64-bit integer, the document's format is %v, want int64", where, t, s["format"])
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		want("integer")
	case reflect.Float32, reflect.Float64:
		want("number")
	case reflect.Slice, reflect.Array:
		if want("array") {
			items, ok := s["items"].(map[string]any)
			if !ok {
				c.t.Errorf("%s: an array without items", where)
				return
			}
			c.compare(where+"[]", t.Elem(), items, request)
		}
	case reflect.Map:
		if want("object") {
			if t.Key().Kind() != reflect.String {
				c.t.Errorf("%s: Go map key %s is not a string", where, t.Key())
			}
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				c.compare(where+"{}", t.Elem(), ap, request)
			} else if t.Elem().Kind() != reflect.Interface {
				c.t.Errorf("%s: Go %s, the document gives no additionalProperties schema", where, t)
			}
		}
	case reflect.Struct:
		if got == "" && objectProps(s) != nil {
			got = "object"
		}
		if want("object") {
			c.compareStruct(where, t, s, request)
		}
	default:
		c.t.Errorf("%s: Go %s has no JSON schema rule in this test", where, t)
	}
}

// compareStruct holds object schema s to struct t, property by property.
func (c *schemaCheck) compareStruct(where string, t reflect.Type, s map[string]any, request bool) {
	props := objectProps(s)
	required := map[string]bool{}
	req, _ := s["required"].([]any)
	for _, r := range req {
		required[fmt.Sprint(r)] = true
	}
	inGo := map[string]bool{}
	for _, f := range jsonFields(t) {
		inGo[f.name] = true
		at := where + "." + f.name
		ps, ok := props[f.name].(map[string]any)
		if !ok {
			c.t.Errorf("%s: Go %s.%s has it, the document does not", at, t, f.name)
			continue
		}
		switch {
		case f.optional && required[f.name]:
			c.t.Errorf("%s: the document requires it, Go may leave it out (omitempty)", at)
		case !f.optional && !required[f.name] && !request:
			c.t.Errorf("%s: Go always sends it (no omitempty), the document does not require it", at)
		}
		c.compare(at, f.typ, ps, request)
	}
	for name := range props {
		if !inGo[name] {
			c.t.Errorf("%s.%s: in the document, not in Go %s", where, name, t)
		}
	}
	for name := range required {
		if !inGo[name] {
			c.t.Errorf("%s.%s: required by the document, not in Go %s", where, name, t)
		}
	}
}
