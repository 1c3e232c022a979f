package tools

import (
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// Codex and Claude Code hide MCP tools until the model searches for them,
// and Codex's tool_search ranks tools by their descriptions alone (eight
// results by default). A description must hold the words an agent would
// search for, its own name's words first. This is a plain BM25 over the
// descriptions, the usual ranking for such a search.
func TestEachToolIsFoundByTheWordsOfItsName(t *testing.T) {
	t.Parallel()
	m, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	// Searches differ in how they cut words; a plural "s" taken off
	// stands for a stemmer, which makes "waits" a "wait".
	for _, tokens := range []func(string) []string{words, stems} {
		docs := make([][]string, len(m.Tools))
		for i, tool := range m.Tools {
			docs[i] = tokens(tool.Description)
		}
		for _, tool := range m.Tools {
			// Names one search cannot tell apart (a stemmer makes
			// "claims" a "claim") are found together, ahead of the rest.
			var alike []int
			for j, other := range m.Tools {
				if strings.Join(tokens(other.Name), " ") == strings.Join(tokens(tool.Name), " ") {
					alike = append(alike, j)
				}
			}
			for _, query := range []string{strings.TrimPrefix(tool.Name, "chat_"), tool.Name} {
				ranked := bm25(docs, tokens(query))
				if len(ranked) < len(alike) || !sameSet(ranked[:len(alike)], alike) {
					var top []string
					for _, r := range ranked[:min(3, len(ranked))] {
						top = append(top, m.Tools[r].Name)
					}
					t.Errorf("searching %q finds %v first, not %s", query, top, tool.Name)
				}
			}
		}
	}
	for _, tool := range m.Tools {
		name := strings.TrimPrefix(tool.Name, "chat_")
		if first := strings.Join(words(tool.Description)[:len(words(name))], " "); first != strings.Join(words(name), " ") {
			t.Errorf("%s: the description starts %q, not with the words of its name", tool.Name, first)
		}
	}
}

// sameSet reports whether a and b hold the same indexes, in any order.
func sameSet(a, b []int) bool {
	x, y := append([]int{}, a...), append([]int{}, b...)
	sort.Ints(x)
	sort.Ints(y)
	return slices.Equal(x, y)
}

// words splits text into lowercase words of letters and digits:
// "prune-ok" is "prune ok", "chat_whoami" is "chat whoami".
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// stems is words with a plural "s" taken off.
func stems(text string) []string {
	out := words(text)
	for i, w := range out {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			out[i] = strings.TrimSuffix(w, "s")
		}
	}
	return out
}

// bm25 ranks the documents that hold any query word, best first.
func bm25(docs [][]string, query []string) []int {
	const k1, b = 1.2, 0.75
	avg := 0.0
	df := map[string]int{}
	for _, d := range docs {
		avg += float64(len(d))
		seen := map[string]bool{}
		for _, w := range d {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	avg /= float64(len(docs))
	n := float64(len(docs))
	scores := map[int]float64{}
	for i, d := range docs {
		tf := map[string]int{}
		for _, w := range d {
			tf[w]++
		}
		for _, q := range query {
			f := float64(tf[q])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[q])+0.5)/(float64(df[q])+0.5))
			scores[i] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(len(d))/avg))
		}
	}
	ranked := make([]int, 0, len(scores))
	for i := range scores {
		ranked = append(ranked, i)
	}
	sort.Slice(ranked, func(x, y int) bool {
		if scores[ranked[x]] != scores[ranked[y]] {
			return scores[ranked[x]] > scores[ranked[y]]
		}
		return ranked[x] < ranked[y]
	})
	return ranked
}

// A snippet full of matches stays within snippetChars once its marks
// are bold: each mark the store gives is one character, each ** two.
func TestSnippetBoundCountsTheBoldMarks(t *testing.T) {
	t.Parallel()
	hit := store.MarkStart + "needle" + store.MarkEnd + " "
	s := markdownSnippet(strings.Repeat(hit, 60))
	if n := utf8.RuneCountInString(s); n > snippetChars {
		t.Fatalf("a snippet of %d characters, want at most %d: %q", n, snippetChars, s)
	}
	if !strings.HasPrefix(s, "**needle** **needle**") {
		t.Fatalf("the marks are not bold: %q", s)
	}
}
