package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// Register creates a customer account.
func (c *Client) Register(ctx context.Context, req apiv1.RegisterRequest) (apiv1.Account, error) {
	var out apiv1.Account
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/auth/register", body: req}, &out)
	return out, err
}

// Login trades an email and password for a session token.
func (c *Client) Login(ctx context.Context, req apiv1.LoginRequest) (apiv1.LoginResponse, error) {
	var out apiv1.LoginResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/auth/login", body: req}, &out)
	return out, err
}

// Logout revokes the client's token.
func (c *Client) Logout(ctx context.Context) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/api/v1/auth/logout"}, nil)
}

// Me returns the caller's account.
func (c *Client) Me(ctx context.Context) (apiv1.Account, error) {
	var out apiv1.Account
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/me"}, &out)
	return out, err
}

// CreateToken makes a named API token for scripts. The answer's Token is
// the secret, shown this once.
func (c *Client) CreateToken(ctx context.Context, name string) (apiv1.Token, error) {
	var out apiv1.Token
	body := apiv1.CreateTokenRequest{Name: name}
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/tokens", body: body}, &out)
	return out, err
}

// GPUTypes lists every GPU type with its spec, prices and availability now.
func (c *Client) GPUTypes(ctx context.Context) (apiv1.GPUTypeList, error) {
	var out apiv1.GPUTypeList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/gpu-types"}, &out)
	return out, err
}

// Zones lists the datacentre sites.
func (c *Client) Zones(ctx context.Context) (apiv1.ZoneList, error) {
	var out apiv1.ZoneList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/zones"}, &out)
	return out, err
}

// SetZoneProbe sets the endpoint customers' browsers time for a zone
// ("" removes it; operators).
func (c *Client) SetZoneProbe(ctx context.Context, zoneID, probeURL string) (apiv1.Zone, error) {
	var out apiv1.Zone
	err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/zones/" + url.PathEscape(zoneID) + "/probe",
		body: apiv1.SetZoneProbeRequest{ProbeURL: probeURL}}, &out)
	return out, err
}

// CreateInstance rents GPUs. The request always carries an Idempotency-Key:
// idempotencyKey, or a random one when it is empty. On a network error the
// request is sent once more with the same key, so the server creates at most
// one instance; a replay is answered 200 with the instance first created.
func (c *Client) CreateInstance(ctx context.Context, req apiv1.CreateInstanceRequest, idempotencyKey string) (apiv1.Instance, error) {
	if idempotencyKey == "" {
		idempotencyKey = NewIdempotencyKey()
	}
	r := request{
		method: http.MethodPost,
		path:   "/api/v1/instances",
		body:   req,
		header: http.Header{IdempotencyHeader: {idempotencyKey}},
		want:   []int{http.StatusCreated, http.StatusOK},
	}
	var out apiv1.Instance
	err := c.do(ctx, r, &out)
	var netErr *NetworkError
	if errors.As(err, &netErr) && ctx.Err() == nil {
		out = apiv1.Instance{}
		err = c.do(ctx, r, &out)
	}
	return out, err
}

// ListInstances lists the caller's instances; all includes deleted ones.
func (c *Client) ListInstances(ctx context.Context, all bool) (apiv1.InstanceList, error) {
	path := "/api/v1/instances"
	if all {
		path += "?all=true"
	}
	var out apiv1.InstanceList
	err := c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// GetInstance returns one instance with its events.
func (c *Client) GetInstance(ctx context.Context, id string) (apiv1.Instance, error) {
	return c.instance(ctx, http.MethodGet, id, "", nil)
}

// StopInstance asks for an instance to be stopped; its volume is kept.
func (c *Client) StopInstance(ctx context.Context, id string) (apiv1.Instance, error) {
	return c.instance(ctx, http.MethodPost, id, "/stop", nil)
}

// StartInstance asks for a stopped instance to be started again.
func (c *Client) StartInstance(ctx context.Context, id string) (apiv1.Instance, error) {
	return c.instance(ctx, http.MethodPost, id, "/start", nil)
}

// DeleteInstance asks for an instance and its volume to be deleted. The
// server accepts the request (202) and deletes in the background.
func (c *Client) DeleteInstance(ctx context.Context, id string) (apiv1.Instance, error) {
	return c.instance(ctx, http.MethodDelete, id, "", []int{http.StatusAccepted, http.StatusOK})
}

func (c *Client) instance(ctx context.Context, method, id, action string, want []int) (apiv1.Instance, error) {
	var out apiv1.Instance
	if id == "" {
		return out, gpurent.Errorf(gpurent.CodeInvalid, "an instance id is required")
	}
	path := "/api/v1/instances/" + url.PathEscape(id) + action
	err := c.do(ctx, request{method: method, path: path, want: want}, &out)
	return out, err
}

// Hosts lists the GPU hosts (operators only).
func (c *Client) Hosts(ctx context.Context) (apiv1.HostList, error) {
	var out apiv1.HostList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/hosts"}, &out)
	return out, err
}

// CordonHost stops new placements on a host; running instances stay.
func (c *Client) CordonHost(ctx context.Context, id string) (apiv1.Host, error) {
	return c.hostAction(ctx, id, "/cordon")
}

// UncordonHost lets a cordoned host take new placements again.
func (c *Client) UncordonHost(ctx context.Context, id string) (apiv1.Host, error) {
	return c.hostAction(ctx, id, "/uncordon")
}

// DrainHost takes a host out of placement and moves its running instances
// to other hosts (maintenance).
func (c *Client) DrainHost(ctx context.Context, id string) (apiv1.Host, error) {
	return c.hostAction(ctx, id, "/drain")
}

func (c *Client) hostAction(ctx context.Context, id, action string) (apiv1.Host, error) {
	var out apiv1.Host
	if id == "" {
		return out, gpurent.Errorf(gpurent.CodeInvalid, "a host id is required")
	}
	path := "/api/v1/hosts/" + url.PathEscape(id) + action
	err := c.do(ctx, request{method: http.MethodPost, path: path}, &out)
	return out, err
}

// postIdempotent sends a money-moving POST with an Idempotency-Key (key, or
// a random one when empty) and sends it once more with the same key after
// a network error, so the server acts at most once.
func (c *Client) postIdempotent(ctx context.Context, path string, body any, key string, out any) error {
	return c.postWithKey(ctx, path, body, key, []int{http.StatusCreated, http.StatusOK}, out)
}

// postWithKey is postIdempotent answered by one of the want statuses.
func (c *Client) postWithKey(ctx context.Context, path string, body any, key string, want []int, out any) error {
	if key == "" {
		key = NewIdempotencyKey()
	}
	r := request{method: http.MethodPost, path: path, body: body,
		header: http.Header{IdempotencyHeader: {key}}, want: want}
	err := c.do(ctx, r, out)
	var netErr *NetworkError
	if errors.As(err, &netErr) && ctx.Err() == nil {
		err = c.do(ctx, r, out)
	}
	return err
}

// Wallet returns the caller's wallet: balances, credits, burn rate, runway.
func (c *Client) Wallet(ctx context.Context) (apiv1.Wallet, error) {
	var out apiv1.Wallet
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/wallet"}, &out)
	return out, err
}

// WalletTransactions lists the caller's ledger entries, newest first: at
// most limit (0: the server's default), before seq before (0: the newest).
func (c *Client) WalletTransactions(ctx context.Context, before int64, limit int) (apiv1.LedgerEntryList, error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/api/v1/wallet/transactions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out apiv1.LedgerEntryList
	err := c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// RedeemVoucher redeems a voucher code for the caller.
func (c *Client) RedeemVoucher(ctx context.Context, code, idempotencyKey string) (apiv1.VoucherRedemption, error) {
	var out apiv1.VoucherRedemption
	err := c.postIdempotent(ctx, "/api/v1/vouchers/redeem", apiv1.RedeemVoucherRequest{Code: code}, idempotencyKey, &out)
	return out, err
}

// CreateVoucher makes a voucher (operators).
func (c *Client) CreateVoucher(ctx context.Context, req apiv1.CreateVoucherRequest, idempotencyKey string) (apiv1.Voucher, error) {
	var out apiv1.Voucher
	err := c.postIdempotent(ctx, "/api/v1/vouchers", req, idempotencyKey, &out)
	return out, err
}

// Credit tops up an account, named by id or e-mail (operators). The
// Idempotency-Key is the credit's own key: a retry credits once.
func (c *Client) Credit(ctx context.Context, account string, req apiv1.CreditRequest, idempotencyKey string) (apiv1.LedgerEntry, error) {
	var out apiv1.LedgerEntry
	err := c.postIdempotent(ctx, "/api/v1/accounts/"+url.PathEscape(account)+"/credit", req, idempotencyKey, &out)
	return out, err
}

// CreatePayment starts a top-up through a payment provider; pay at the
// answer's PayURL.
func (c *Client) CreatePayment(ctx context.Context, req apiv1.CreatePaymentRequest, idempotencyKey string) (apiv1.Payment, error) {
	var out apiv1.Payment
	err := c.postIdempotent(ctx, "/api/v1/payments", req, idempotencyKey, &out)
	return out, err
}

// SettlePayment confirms (or, with req.Failed, fails) a payment that no
// gateway confirms, such as a bank transfer (operators). Idempotent on the
// payment id.
func (c *Client) SettlePayment(ctx context.Context, provider, paymentID string, req apiv1.SettlePaymentRequest) (apiv1.PaymentCallbackResponse, error) {
	var out apiv1.PaymentCallbackResponse
	err := c.do(ctx, request{method: http.MethodPost,
		path: "/api/v1/payments/" + url.PathEscape(provider) + "/" + url.PathEscape(paymentID) + "/settle", body: req}, &out)
	return out, err
}

// CreateJoinToken makes a one-time join token for one host (operators); the
// answer holds its secret, shown this once.
func (c *Client) CreateJoinToken(ctx context.Context, req apiv1.CreateJoinTokenRequest) (apiv1.CreatedJoinToken, error) {
	var out apiv1.CreatedJoinToken
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/join-tokens", body: req, want: []int{http.StatusCreated}}, &out)
	return out, err
}

// JoinTokens lists the join tokens, newest first, without secrets.
func (c *Client) JoinTokens(ctx context.Context) (apiv1.JoinTokenList, error) {
	var out apiv1.JoinTokenList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/join-tokens"}, &out)
	return out, err
}

// RevokeJoinToken revokes an unused join token.
func (c *Client) RevokeJoinToken(ctx context.Context, id string) error {
	if id == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "a join token id is required")
	}
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/join-tokens/" + url.PathEscape(id), want: []int{http.StatusNoContent}}, nil)
}

// ResetHost invalidates a host's agent credential and answers the join
// token that re-registers it (its secret shown this once).
func (c *Client) ResetHost(ctx context.Context, id string, req apiv1.HostResetRequest) (apiv1.HostReset, error) {
	var out apiv1.HostReset
	if id == "" {
		return out, gpurent.Errorf(gpurent.CodeInvalid, "a host id is required")
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/hosts/" + url.PathEscape(id) + "/reset", body: req}, &out)
	return out, err
}
