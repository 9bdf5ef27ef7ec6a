package docker

import (
	"encoding/base64"
	"encoding/json"

	"github.com/gpurent/gpurent/internal/imageref"
)

// pullAuth is the X-Registry-Auth value for a pull of ref: the credential
// Config.Registries holds for ref's registry, encoded as the daemon takes
// it, or "" (anonymous).
func (r *Runtime) pullAuth(ref string) string {
	reg, err := imageref.Registry(ref)
	if err != nil {
		return ""
	}
	a, ok := r.cfg.Registries.For(reg)
	if !ok {
		return ""
	}
	b, err := json.Marshal(struct {
		Username      string `json:"username"`
		Password      string `json:"password"`
		ServerAddress string `json:"serveraddress"`
	}{a.Username, a.Password, a.Addr})
	if err != nil {
		return ""
	}
	return base64.URLEncoding.EncodeToString(b)
}
