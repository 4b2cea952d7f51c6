package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/report"
	"github.com/hlsbench/hlsbench/results/compare"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads"
)

// ReportOptions are the flags and arguments of `hlsbench report`.
type ReportOptions struct {
	Inputs []string
	Out    string
	Title  string
	// Threshold, Alpha and ToleranceMs are compare's: the report calls
	// two cells a tie when compare would find no significant change.
	Threshold   float64
	Alpha       float64
	ToleranceMs float64
}

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	o := ReportOptions{}
	c := &cobra.Command{
		Use:   "report SUITE_DIR...|FILES... --out DIR",
		Short: "Write the results page, charts, Markdown and CSV from result files",
		Long: `Write the results page from result files: DIR/index.html (self-contained:
inline CSS, images beside it, relative links only, nothing fetched from the
network), one chart per test as PNG and SVG in DIR/charts, DIR/report.md
(for a README or a pull request), DIR/figures.csv (every figure: each
cell's value and each measured pass), and the result files copied into
DIR/runs. The same inputs give the same bytes.

The input is a suite directory (its manifest says which cells finished and
in which file; cells that did not finish are shown without a value), a
directory of run-*.json files, or run files. Several suite directories are
one page measured in parts (make page-part): they are merged into one
manifest, written as DIR/runs/manifest.json with each part's flags, and a
cell finished in two of them is refused. The report reads the files
only: it never measures.

Each test's finding names the leading cell and calls the others a tie when
compare's test finds no significant difference (Mann-Whitney U over the
valid passes' values, --alpha, --threshold, --tolerance).

DIR must be new, empty, or a report written before: it is then replaced
whole, and only once the new report is complete.

Exit codes: 0 written; 1 failure; 2 bad input (an unreadable or unknown
file, a DIR that holds other files, bad flags).`,
		Example: `  hlsbench report suites/today --out site
  hlsbench report results/page/part1 results/page/part2 --out site
  hlsbench report run-20261201T012041Z-1c03b0e0.json run-20261201T024745Z-d38e6631.json --out /tmp/page`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("report: want suite directories, a directory of run files, or run files")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.Inputs = args
			return RunReport(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Out, "out", "", "the directory to write (required): new, empty, or an earlier report")
	f.StringVar(&o.Title, "title", report.DefaultTitle, "the page's title")
	f.Float64Var(&o.Threshold, "threshold", stats.DefaultThreshold, "smallest difference of medians, in percent, that is not a tie")
	f.Float64Var(&o.Alpha, "alpha", stats.DefaultAlpha, "significance level of the U test")
	f.Float64Var(&o.ToleranceMs, "tolerance", compare.DefaultToleranceMs, "the generator's timing tolerance: smallest difference of a latency's medians, in ms, that is not a tie")
	toleranceAlias(c, &o.ToleranceMs, stderr)
	return c
}

// RunReport is `hlsbench report`.
func RunReport(ctx context.Context, stdout, stderr io.Writer, o ReportOptions) error {
	if o.Out == "" {
		return usagef("--out: the report needs a directory to write")
	}
	if err := checkJudge(o.Threshold, o.Alpha, o.ToleranceMs); err != nil {
		return err
	}
	in, err := report.Read(o.Inputs)
	if err != nil {
		return usageError{err}
	}
	rep, err := report.Build(in, report.Options{Title: o.Title, Catalog: workloads.Catalog(),
		Compare: compare.Options{Threshold: o.Threshold, Alpha: o.Alpha, ToleranceMs: o.ToleranceMs}})
	if err != nil {
		return usageError{err}
	}
	if err := report.WriteDir(o.Out, rep); err != nil {
		return usageError{outDirError(err)}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(stderr, "hlsbench: report: %s\n", w)
	}
	fmt.Fprintf(stdout, "hlsbench: report: %s (%d tests from %d result %s)\n", filepath.Join(o.Out, "index.html"), countTests(rep), len(rep.Sources), map[bool]string{true: "file", false: "files"}[len(rep.Sources) == 1])
	return nil
}

func countTests(rep *report.Report) int {
	n := 0
	for _, w := range rep.Workloads {
		n += len(w.Tests)
	}
	return n
}
