package customer

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
)

// The live streams (text/event-stream) of the dashboard and the instance
// page. Each polls the rental service as the viewer every pollEvery and
// sends what console.js applies: {"set": {id: text}}, {"chart": {id:
// chart}} or {"reload": true}. A stream ends when the client goes away, or
// after streamFor, when the browser's EventSource connects again (its first
// answer repairs whatever it missed); a comment line every keepAliveEvery
// keeps proxies from closing a quiet stream.
const (
	pollEvery      = 2 * time.Second
	keepAliveEvery = 15 * time.Second
	streamFor      = 30 * time.Minute
)

// liveMsg is one event console.js understands.
type liveMsg struct {
	Set    map[string]string    `json:"set,omitempty"`
	Chart  map[string]chartData `json:"chart,omitempty"`
	Reload bool                 `json:"reload,omitempty"`
}

// stream serves an event stream: poll is called at once and then every
// pollEvery; it answers the messages to send and whether the stream is
// done. An error from the first poll is answered as a page (a 404 for
// another account's instance); a later one ends the stream, and the
// browser's reconnect sees it.
func (s *Pages) stream(w http.ResponseWriter, r *http.Request, p *web.Page, poll func(first bool) ([]liveMsg, bool, error)) {
	if !s.streams.acquire(p.Account.ID) {
		// Too many open at once for this account: the page still works,
		// it just is not live; the browser retries later.
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many live pages open", http.StatusTooManyRequests)
		return
	}
	defer s.streams.release(p.Account.ID)
	msgs, done, err := poll(true)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		return
	}
	rc := http.NewResponseController(w)
	// A stream outlives the server's write timeout; lift it here only.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(msgs []liveMsg) bool {
		for _, m := range msgs {
			b, err := json.Marshal(m)
			if err != nil {
				s.log.Error("console: live message", "err", err)
				return false
			}
			if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	// The browser waits this long before it connects again.
	if _, err := w.Write([]byte("retry: 3000\n\n")); err != nil || !send(msgs) || done {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	alive := time.NewTicker(keepAliveEvery)
	defer alive.Stop()
	end := time.NewTimer(streamFor)
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-end.C:
			return
		case <-alive.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case <-tick.C:
			msgs, done, err := poll(false)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("console: live stream ends", "path", r.URL.Path, "err", err)
				}
				return
			}
			if !send(msgs) || done {
				return
			}
		}
	}
}

// dashboardEvents streams the dashboard's instance states, with the hourly
// costs and the wallet's figures that follow them; a change of the
// set of instances (from the one the page was drawn with, ?v=) reloads it.
func (s *Pages) dashboardEvents(w http.ResponseWriter, r *http.Request, p *web.Page) {
	drawn := r.URL.Query().Get("v")
	states := map[string]gpurent.InstanceState{}
	s.stream(w, r, p, func(first bool) ([]liveMsg, bool, error) {
		list, err := s.cfg.Rental.List(p.Context(), p.Account, false)
		if err != nil {
			return nil, false, err
		}
		if instanceSetKey(list) != drawn {
			return []liveMsg{{Reload: true}}, true, nil
		}
		set := map[string]string{}
		prices := s.newHourPricer(p.Account)
		for i := range list {
			in := &list[i].Instance
			if first || states[in.ID] != in.State {
				row, err := s.dashboardRow(p.Context(), p, prices, &list[i])
				if err != nil {
					return nil, false, err
				}
				set[row.StateID], set["cost-"+in.ID] = row.StateText, row.Cost
			}
			states[in.ID] = in.State
		}
		if len(set) > 0 && s.cfg.Wallet != nil {
			// What burns follows the states.
			v, err := s.cfg.Wallet.Wallet(p.Context(), p.Account)
			if err != nil {
				return nil, false, err
			}
			maps.Copy(set, walletTexts(p, v))
		}
		if len(set) == 0 {
			return nil, false, nil
		}
		return []liveMsg{{Set: set}}, false, nil
	})
}

// instanceEvents streams the instance page: its state and GPU charts; a
// new state or event (from what the page was drawn with, ?state= and
// ?events=) reloads it, since its actions and history change with them.
func (s *Pages) instanceEvents(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	q := r.URL.Query()
	drawnState := gpurent.InstanceState(q.Get("state"))
	drawnEvents, err := strconv.Atoi(q.Get("events"))
	if err != nil {
		drawnEvents = -1
	}
	var lastSample time.Time
	src, charts := s.cfg.Incidents.(sampleSource)
	s.stream(w, r, p, func(first bool) ([]liveMsg, bool, error) {
		d, err := s.cfg.Rental.Get(p.Context(), p.Account, id)
		if err != nil {
			return nil, false, err
		}
		in := &d.Instance
		if in.State != drawnState || len(d.Events) != drawnEvents {
			return []liveMsg{{Set: map[string]string{"instance-state": stateText(p, in.State)}}, {Reload: true}}, true, nil
		}
		var out []liveMsg
		if first {
			out = append(out, liveMsg{Set: map[string]string{"instance-state": stateText(p, in.State)}})
		}
		if charts && len(in.GPUIDs) > 0 {
			series, err := src.InstanceSamples(p.Context(), p.Account, id)
			if err != nil {
				return nil, false, err
			}
			var newest time.Time
			for _, s := range series {
				if n := len(s.Points); n > 0 && s.Points[n-1].At.After(newest) {
					newest = s.Points[n-1].At
				}
			}
			if newest.After(lastSample) {
				lastSample = newest
				util, mem, n := gpuCharts(series)
				if n > 0 {
					out = append(out, liveMsg{Chart: map[string]chartData{"chart-util": util, "chart-mem": mem}})
				}
			}
		}
		return out, false, nil
	})
}

// chartJSON is a chart for a data-chart attribute.
func chartJSON(c chartData) string {
	b, err := json.Marshal(c)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// maxStreamsPerAccount bounds the live streams one account holds open at
// once (each polls the services every 2 s).
const maxStreamsPerAccount = 16

// streamCounter counts the open live streams per account.
type streamCounter struct {
	mu   sync.Mutex
	open map[string]int
}

func (c *streamCounter) acquire(accountID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[string]int{}
	}
	if c.open[accountID] >= maxStreamsPerAccount {
		return false
	}
	c.open[accountID]++
	return true
}

func (c *streamCounter) release(accountID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[accountID]--; c.open[accountID] <= 0 {
		delete(c.open, accountID)
	}
}
