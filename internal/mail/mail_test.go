package mail_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	gmail "github.com/gpurent/gpurent/internal/mail"
	"github.com/gpurent/gpurent/internal/mail/smtptest"
)

const from = "gpurent <noreply@gpurent.example>"

func senderURL(scheme, addr string, extra url.Values) string {
	q := url.Values{"from": {from}}
	for k, v := range extra {
		q[k] = v
	}
	return scheme + "://" + addr + "?" + q.Encode()
}

func newSender(t *testing.T, raw string) *gmail.Sender {
	t.Helper()
	s, err := gmail.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSendDelivers: a message with a Chinese subject and a multi-line body
// reaches a real SMTP server whole, with the headers a mail client needs.
func TestSendDelivers(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := newSender(t, senderURL("smtp", srv.Addr, nil))
	body := "请在 1 小时内打开下面的链接设置新密码：\nhttps://gpu.example/password/reset?token=abc%2Bdef\n\n——gpurent"
	if err := s.Send(context.Background(), "周老师 <zhou@lab.example>", "重置 gpurent 密码", body); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Wait(t, 1, 10*time.Second)
	m := msgs[0]
	if m.Subject != "重置 gpurent 密码" {
		t.Errorf("subject %q", m.Subject)
	}
	if want := strings.ReplaceAll(body, "\n", "\r\n"); m.Body != want {
		t.Errorf("body %q, want %q", m.Body, want)
	}
	if got, err := mail.ParseAddress(m.Header.Get("From")); err != nil || got.Address != "noreply@gpurent.example" || got.Name != "gpurent" {
		t.Errorf("From %q (%v)", m.Header.Get("From"), err)
	}
	if got, err := (&mail.AddressParser{}).Parse(m.Header.Get("To")); err != nil || got.Address != "zhou@lab.example" || got.Name != "周老师" {
		t.Errorf("To %q (%v)", m.Header.Get("To"), err)
	}
	if rcpt := m.Header.Get("X-RcptTo"); rcpt != "zhou@lab.example" {
		t.Errorf("envelope recipient %q", rcpt)
	}
	if d, err := m.Header.Date(); err != nil || time.Since(d) > time.Minute || time.Since(d) < -time.Minute {
		t.Errorf("Date %q (%v)", m.Header.Get("Date"), err)
	}
	if id := m.Header.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@gpurent.example>") {
		t.Errorf("Message-ID %q", id)
	}
	if ct := m.Header.Get("Content-Type"); ct != "text/plain; charset=UTF-8" {
		t.Errorf("Content-Type %q", ct)
	}
	for _, line := range strings.Split(string(m.Raw), "\n") {
		if len(line) > 998 {
			t.Fatalf("a line of %d bytes", len(line))
		}
	}
}

// TestSendTLS: against a server that requires STARTTLS, the sender
// upgrades and checks the server's certificate against the URL's ca; a
// certificate nobody vouches for stops the delivery, and tls=required
// refuses a server that offers no STARTTLS.
func TestSendTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	tlsSrv := smtptest.Start(t, smtptest.Options{CertFile: certFile, KeyFile: keyFile})
	ctx := context.Background()

	s := newSender(t, senderURL("smtp", tlsSrv.Addr, url.Values{"ca": {certFile}, "tls": {"required"}}))
	if err := s.Send(ctx, "wang@lab.example", "over TLS", "hello"); err != nil {
		t.Fatal(err)
	}
	if m := tlsSrv.Wait(t, 1, 10*time.Second)[0]; m.Body != "hello" || m.Subject != "over TLS" {
		t.Errorf("delivered %q / %q", m.Subject, m.Body)
	}

	untrusted := newSender(t, senderURL("smtp", tlsSrv.Addr, nil))
	err := untrusted.Send(ctx, "wang@lab.example", "untrusted", "hello")
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an unknown certificate: %v", err)
	}

	plainSrv := smtptest.Start(t, smtptest.Options{})
	required := newSender(t, senderURL("smtp", plainSrv.Addr, url.Values{"tls": {"required"}}))
	if err := required.Send(ctx, "wang@lab.example", "in clear", "hello"); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("tls=required against a server without STARTTLS: %v", err)
	}
	withUser := newSender(t, "smtp://relay:secret@"+plainSrv.Addr+"?from=noreply@gpurent.example")
	if err := withUser.Send(ctx, "wang@lab.example", "auth", "hello"); err == nil || !strings.Contains(err.Error(), "AUTH") {
		t.Errorf("a user for a server without AUTH: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(tlsSrv.Messages(t)) + len(plainSrv.Messages(t)); n != 1 {
		t.Errorf("%d messages delivered, want only the trusted one", n)
	}
}

// TestSendRefusesBadInput: a bad recipient or a subject with a line break
// (header injection) is refused before anything is sent; a server that
// does not answer is a clear error, within the caller's deadline.
func TestSendRefusesBadInput(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := newSender(t, senderURL("smtp", srv.Addr, nil))
	ctx := context.Background()
	for _, c := range []struct{ to, subject string }{
		{"not-an-address", "hello"},
		{"a@b.example, c@d.example", "hello"},
		{"a@b.example\r\nBcc: c@d.example", "hello"},
		{"a@b.example", "hello\r\nBcc: c@d.example"},
		{"a@b.example", "hello\nX: y"},
	} {
		if err := s.Send(ctx, c.to, c.subject, "body"); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("Send(%q, %q) = %v, want invalid", c.to, c.subject, err)
		}
	}
	if msgs := srv.Messages(t); len(msgs) != 0 {
		t.Errorf("%d messages delivered", len(msgs))
	}

	// A listener that never speaks: the deadline ends the wait.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mute := newSender(t, senderURL("smtp", l.Addr().String(), nil))
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := mute.Send(short, "a@b.example", "hello", "body"); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Errorf("a silent server: %v", err)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	caless := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(caless, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		"",
		"mail.example:587",
		"http://mail.example?from=a@b.example",
		"smtp://?from=a@b.example",
		"smtp://mail.example",
		"smtp://mail.example?from=not-an-address",
		"smtp://mail.example/path?from=a@b.example",
		"smtp://mail.example?from=a@b.example&tls=maybe",
		"smtp://mail.example?from=a@b.example&verify=no",
		"smtp://mail.example?from=a@b.example&ca=/nonexistent.pem",
		"smtp://mail.example?from=a@b.example&ca=" + caless,
		"smtp://mail.example:%zz?from=a@b.example",
	} {
		if _, err := gmail.New(raw); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("New(%q) = %v, want invalid", raw, err)
		}
	}
	if _, err := gmail.New("smtp://relay:hunter2@mail.example:%zz?from=a@b.example"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an unparsable URL's error shows its password: %v", err)
	}
	s, err := gmail.New("smtps://u:p@mail.example?from=" + url.QueryEscape("运维 <ops@gpu.example>"))
	if err != nil || s.From() != "=?utf-8?q?=E8=BF=90=E7=BB=B4?= <ops@gpu.example>" {
		t.Errorf("New(smtps) = %v, from %q", err, s.From())
	}
}

// FuzzNew: any URL is either refused with an invalid-input error or
// accepted with a sender address; never a panic.
func FuzzNew(f *testing.F) {
	for _, seed := range []string{"smtp://h?from=a@b.example", "smtps://u:p@h:465?from=a@b.example&tls=required", "smtp://[::1]:25?from=x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := gmail.New(raw)
		if err != nil {
			if !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Fatalf("New(%q): %v is not an invalid-input error", raw, err)
			}
			return
		}
		if _, err := mail.ParseAddress(s.From()); err != nil {
			t.Fatalf("New(%q) accepted a sender %q that does not parse: %v", raw, s.From(), err)
		}
	})
}

// selfSigned writes a certificate for 127.0.0.1, its own authority, and
// its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gpurent test relay"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
