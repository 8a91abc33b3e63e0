package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Settings come from four places; the first that has a value wins:
//
//	1. a flag on the command line       --data-dir /var/lib/metad
//	2. an environment variable          METAD_DATA_DIR=/var/lib/metad
//	3. the YAML file given by --config  data-dir: /var/lib/metad
//	4. the default
//
// Every server flag has all three spellings: the variable is METAD_ and
// the flag name in upper case with '-' as '_'; the file key is the flag
// name. A list (--join) is repeated on the command line, comma-separated in
// the environment, and a YAML sequence in the file.

// envName is the environment variable for a flag.
func envName(flag string) string {
	return "METAD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyLayers fills every flag not set on the command line from the
// environment, then from the config file. It returns an error naming every
// unknown file key and every value that does not parse.
func applyLayers(fs *pflag.FlagSet, configFile string) error {
	file, err := readConfigFile(configFile)
	if err != nil {
		return err
	}
	var errs []string
	for key := range file {
		if f := fs.Lookup(key); f == nil || key == "config" {
			errs = append(errs, fmt.Sprintf("%s: unknown setting %q", configFile, key))
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := setFlag(fs, f.Name, []string{v}); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", envName(f.Name), err))
			}
			return
		}
		if vals, ok := file[f.Name]; ok {
			if err := setFlag(fs, f.Name, vals); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %s: %v", configFile, f.Name, err))
			}
		}
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("invalid settings:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

func setFlag(fs *pflag.FlagSet, name string, vals []string) error {
	for _, v := range vals {
		if err := fs.Set(name, v); err != nil {
			return err
		}
	}
	return nil
}

// readConfigFile reads a flat YAML map of flag names to values (scalars or
// sequences of scalars). An empty name means no file.
func readConfigFile(path string) (map[string][]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	out := make(map[string][]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				out[k] = append(out[k], fmt.Sprint(e))
			}
		case map[string]any:
			return nil, fmt.Errorf("config file %s: %s: nested maps are not settings (use flat flag names)", path, k)
		default:
			out[k] = []string{fmt.Sprint(v)}
		}
	}
	return out, nil
}

// configFileFrom finds --config before the layers are applied: on the
// command line, else in METAD_CONFIG.
func configFileFrom(fs *pflag.FlagSet) string {
	if f := fs.Lookup("config"); f != nil && f.Changed {
		return f.Value.String()
	}
	return os.Getenv(envName("config"))
}
