package pricing

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// The stored form of a price version: JSON with snake_case names, integer
// fen, clock times as "HH:MM" or "HH:MM:SS" in Asia/Shanghai, the effective
// instant in RFC 3339. It is also the body of the operator's price API.
type versionDoc struct {
	ID        string              `json:"id"`
	Effective time.Time           `json:"effective"`
	OffPeak   ruleDoc             `json:"off_peak"`
	Types     map[string]priceDoc `json:"gpu_types"`
}

type ruleDoc struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	Weekends bool   `json:"weekends"`
}

type priceDoc struct {
	PeakFen            int64 `json:"peak_fen"`
	OffPeakFen         int64 `json:"off_peak_fen"`
	AcademicPeakFen    int64 `json:"academic_peak_fen"`
	AcademicOffPeakFen int64 `json:"academic_off_peak_fen"`
	DailyFen           int64 `json:"daily_fen"`
	WeeklyFen          int64 `json:"weekly_fen"`
	MonthlyFen         int64 `json:"monthly_fen"`
	AcademicDailyFen   int64 `json:"academic_daily_fen"`
	AcademicWeeklyFen  int64 `json:"academic_weekly_fen"`
	AcademicMonthlyFen int64 `json:"academic_monthly_fen"`
	NoGPUFen           int64 `json:"no_gpu_fen"`
}

// EncodeVersion writes a version in its stored form.
func EncodeVersion(v rating.Version) ([]byte, error) {
	d := versionDoc{ID: v.ID, Effective: v.Effective.UTC(), Types: map[string]priceDoc{},
		OffPeak: ruleDoc{Start: v.Rule.Start.String(), End: v.Rule.End.String(), Weekends: v.Rule.Weekends}}
	for id, p := range v.Types {
		d.Types[id] = priceDoc(p)
	}
	return json.Marshal(d)
}

// DecodeVersion reads a version from its stored form (or an API body) and
// validates it.
func DecodeVersion(b []byte) (rating.Version, error) {
	var d versionDoc
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return rating.Version{}, gpurent.WrapError(gpurent.CodeInvalid, err, "price list: %v", err)
	}
	start, err := parseClock(d.OffPeak.Start)
	if err != nil {
		return rating.Version{}, err
	}
	end, err := parseClock(d.OffPeak.End)
	if err != nil {
		return rating.Version{}, err
	}
	v := rating.Version{ID: d.ID, Effective: d.Effective.UTC(), Types: map[string]rating.Prices{},
		Rule: rating.Rule{Start: start, End: end, Weekends: d.OffPeak.Weekends}}
	if err := v.Rule.Validate(); err != nil {
		return rating.Version{}, err
	}
	if len(d.Types) == 0 {
		return rating.Version{}, gpurent.Errorf(gpurent.CodeInvalid, "price list: gpu_types is empty")
	}
	for id, p := range d.Types {
		prices := rating.Prices(p)
		if err := prices.Validate(); err != nil {
			return rating.Version{}, gpurent.WrapError(gpurent.CodeInvalid, err, "price list, %s: %s", id, gpurent.ErrorMessage(err))
		}
		v.Types[id] = prices
	}
	return v, nil
}

// parseClock reads "HH:MM" or "HH:MM:SS".
func parseClock(s string) (rating.ClockTime, error) {
	parts := strings.Split(s, ":")
	bad := gpurent.Errorf(gpurent.CodeInvalid, "clock time %q: want HH:MM or HH:MM:SS", s)
	if len(parts) < 2 || len(parts) > 3 {
		return 0, bad
	}
	var f [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) != 2 {
			return 0, bad
		}
		f[i] = n
	}
	c := rating.Clock(f[0], f[1], f[2])
	if c < 0 {
		return 0, bad
	}
	return c, nil
}
