package app

import (
	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/api"
	"github.com/gpurent/gpurent/internal/console"
	"github.com/gpurent/gpurent/internal/ratelimit"
)

// newConsole wires the web console to the services the API uses.
func newConsole(cfg ServerConfig, s *Server, access *api.Access, mailer console.Mailer, limiter *ratelimit.Limiter) (*console.Server, error) {
	c := console.Config{Auth: s.Auth, Rental: s.Rental, Fleet: s.Fleet, Billing: s.Billing, Wallet: s.Wallet,
		Metering: s.Metering, Academic: s.Academic, SSHKeys: s.SSHKeys, Incidents: s.Incidents, Certification: s.Certification, Images: s.Images,
		Store: s.Store, PublicURL: s.URL, SecureCookies: cfg.SecureCookies, Mailer: mailer,
		Logger: cfg.Logger, Now: cfg.Now, Limiter: limiter}
	if cfg.PublicURL != "" {
		c.PublicURL = cfg.PublicURL
	}
	if access != nil {
		c.SSHAddr, c.PortLink = access.SSHAddr, access.Link
		if s.gateway != nil {
			c.Logs = s.gateway.gw
		}
		if s.gateway != nil && s.gateway.proxy != nil {
			c.PortsOrigin = s.gateway.proxy.Source()
		}
		if access.HostKey != nil {
			c.SSHHostKeyFingerprint = ssh.FingerprintSHA256(access.HostKey)
		}
	}
	return console.New(c)
}
