package metering

import (
	"encoding/csv"
	"io"
	"strconv"
)

// WriteCSV writes the statement as CSV: a header, one row per line and a
// total row; the columns of GET /api/v1/statements/{month}?format=csv and
// the console's download alike.
func (st *Statement) WriteCSV(w io.Writer) error {
	month := st.Month.Format("2006-01")
	c := csv.NewWriter(w)
	_ = c.Write([]string{"month", "instance_id", "instance_name", "gpu_type", "gpus", "window", "rate_fen_per_hour",
		"units", "seconds", "exact_fen", "amount_fen", "price_permille"})
	for _, l := range st.Lines {
		share := ""
		if l.PricePermille > 0 {
			share = strconv.Itoa(l.PricePermille)
		}
		_ = c.Write([]string{month, l.InstanceID, l.InstanceName, l.TypeID, strconv.Itoa(l.GPUCount), l.Window,
			strconv.FormatInt(l.RateFen, 10), strconv.FormatInt(l.Units, 10), strconv.FormatInt(l.Seconds, 10),
			l.ExactText, strconv.FormatInt(l.Fen, 10), share})
	}
	_ = c.Write([]string{month, "", "", "", "", "total", "", "", "", "", strconv.FormatInt(st.TotalFen, 10), ""})
	c.Flush()
	return c.Error()
}
