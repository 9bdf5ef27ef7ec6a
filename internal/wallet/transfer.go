package wallet

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/money"
)

// BankTransferName is the bank-transfer provider's name.
const BankTransferName = "bank-transfer"

// BankTransferProvider takes top-ups by bank transfer (对公转账), the way
// most Chinese businesses pay a supplier: the customer transfers the amount
// to the operator's account quoting the payment's reference, and an
// operator who sees the money arrive confirms the payment
// (ConfirmPayment; `gpurent payment confirm`). No gateway calls back.
type BankTransferProvider struct {
	payee string
}

// NewBankTransferProvider makes the provider; payee is what customers are
// told to pay to (bank, account name and number).
func NewBankTransferProvider(payee string) *BankTransferProvider {
	return &BankTransferProvider{payee: payee}
}

// Name is "bank-transfer".
func (b *BankTransferProvider) Name() string { return BankTransferName }

// CreatePayment opens a transfer: its id is the reference the customer
// quotes; the "pay URL" is the instruction.
func (b *BankTransferProvider) CreatePayment(_ context.Context, _ string, amountFen int64) (string, string, error) {
	ref := "BT" + strings.ToUpper(gpurent.RandomSecret(8))
	return ref, fmt.Sprintf("bank transfer of %s to %s, quoting reference %s", money.Format(amountFen), b.payee, ref), nil
}

// ParseCallback refuses: an operator confirms transfers.
func (b *BankTransferProvider) ParseCallback([]byte, string) (Callback, error) {
	return Callback{}, gpurent.Errorf(gpurent.CodeForbidden, "bank transfers are confirmed by an operator, not by callback")
}
