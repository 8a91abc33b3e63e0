package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// Selector is one vector selector of an expression: the metric it names
// and the labels it matches on. Where says which rule or panel it is in.
type Selector struct {
	Where  string
	Metric string
	Labels []string
}

// expr is one PromQL expression of a file, with where it is.
type expr struct {
	where, text string
}

func fileSelectors(path string) ([]Selector, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var exprs []expr
	switch {
	case strings.HasSuffix(path, ".json"):
		exprs, err = dashboardExprs(b)
	case strings.HasSuffix(path, ".yml"), strings.HasSuffix(path, ".yaml"):
		exprs, err = ruleExprs(b)
	default:
		err = fmt.Errorf("want a .yml rules file or a .json dashboard")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(exprs) == 0 {
		return nil, fmt.Errorf("%s: no PromQL expression found", path)
	}
	var out []Selector
	for _, e := range exprs {
		sels, err := selectors(e.text)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, e.where, err)
		}
		for _, s := range sels {
			s.Where = e.where
			out = append(out, s)
		}
	}
	return out, nil
}

// ruleExprs returns the expr of every alerting and recording rule.
func ruleExprs(b []byte) ([]expr, error) {
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	var out []expr
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Expr == "" {
				return nil, fmt.Errorf("group %s: rule %s%s has no expr", g.Name, r.Alert, r.Record)
			}
			out = append(out, expr{g.Name + "/" + r.Alert + r.Record, r.Expr})
		}
	}
	return out, nil
}

// labelValues is a Grafana template variable's query: label_values(SELECTOR, LABEL).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// dashboardExprs returns every "expr" of the dashboard's panel targets,
// and the selector of each label_values() template variable query.
func dashboardExprs(b []byte) ([]expr, error) {
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	var out []expr
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, expr{"panel " + p.Title, grafanaVars(t.Expr)})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		if q == "" {
			if m, ok := v.Query.(map[string]any); ok {
				q, _ = m["query"].(string)
			}
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			out = append(out, expr{"variable " + v.Name, grafanaVars(m[1])})
		}
	}
	return out, nil
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// grafanaVars replaces Grafana's variables by what PromQL can parse: its
// interval variables by durations, the others (in label matchers) by a
// value.
func grafanaVars(s string) string {
	s = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m", "$__interval", "1m", "$__range", "1h").Replace(s)
	return grafanaVar.ReplaceAllString(s, "x")
}

var grafanaVar = regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?`)

// selectors parses e and returns each vector selector in it.
func selectors(e string) ([]Selector, error) {
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(e)
	if err != nil {
		return nil, err
	}
	var out []Selector
	for _, path := range parser.ExtractSelectors(ast) {
		s := Selector{}
		for _, m := range path {
			switch {
			case m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual:
				s.Metric = m.Value
			case m.Name == model.MetricNameLabel:
				return nil, fmt.Errorf("selector %v: match the metric name exactly", path)
			default:
				s.Labels = append(s.Labels, m.Name)
			}
		}
		if s.Metric == "" {
			return nil, fmt.Errorf("selector %v names no metric", path)
		}
		sort.Strings(s.Labels)
		out = append(out, s)
	}
	return out, nil
}
