package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// samples are measured durations of one kind of operation.
type samples []time.Duration

// pct is the p-th percentile (nearest rank).
func (s samples) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// mean is the arithmetic mean.
func (s samples) mean() time.Duration {
	if len(s) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s))
}

// figure is one row of the table.
type figure struct {
	what    string
	setup   string
	lat     samples // a latency: p50 and p95 are shown
	value   string  // otherwise: the figure itself
	goal    string
	met     string // "yes", "no", or "" when there is no goal
	command string
}

// ratio compares one tool's p50 on the small and the large history.
type ratio struct {
	tool       string
	small, big time.Duration
}

type report struct {
	figures []figure
	ratios  []ratio
}

func (r *report) add(f figure) {
	r.figures = append(r.figures, f)
	p50, p95 := "", ""
	if f.lat != nil {
		p50, p95 = ms(f.lat.pct(50)), ms(f.lat.pct(95))
	}
	progress("%s [%s]: %s %s %s", f.what, f.setup, p50, p95, f.value)
}

func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 0:
		return "−" + ms(-d)
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func (r *report) print(w io.Writer, machine string) {
	fmt.Fprintf(w, "Machine: %s.\n\n", machine)
	fmt.Fprintln(w, "| figure | setup | p50 | p95 | n / value | goal | met | command |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, f := range r.figures {
		p50, p95, v := "", "", f.value
		if f.lat != nil {
			p50, p95 = ms(f.lat.pct(50)), ms(f.lat.pct(95))
			if v == "" {
				v = fmt.Sprintf("n=%d", len(f.lat))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | `%s` |\n", f.what, f.setup, p50, p95, v, f.goal, f.met, f.command)
	}
	if len(r.ratios) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| tool | p50, 1k history | p50, 100k history | 100k / 1k | within 1.5× |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, x := range r.ratios {
		q := float64(x.big) / float64(x.small)
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× | %s |\n", x.tool, ms(x.small), ms(x.big), q, yesNo(q <= 1.5))
	}
}
