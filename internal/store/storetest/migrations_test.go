package storetest

import (
	"testing"

	"github.com/gpurent/gpurent/internal/store/postgres"
	"github.com/gpurent/gpurent/internal/store/sqlite"
	"github.com/gpurent/gpurent/internal/store/sqlstore"
)

// TestMigrationNumbering holds both backends to the same numbered
// migrations, file for file.
func TestMigrationNumbering(t *testing.T) {
	lite, err := sqlstore.ParseMigrations(sqlite.Migrations())
	if err != nil {
		t.Fatalf("sqlite migrations: %v", err)
	}
	pg, err := sqlstore.ParseMigrations(postgres.Migrations())
	if err != nil {
		t.Fatalf("postgres migrations: %v", err)
	}
	if len(lite) != len(pg) {
		t.Fatalf("sqlite has %d migrations, postgres %d", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].Version != pg[i].Version || lite[i].Name != pg[i].Name {
			t.Fatalf("migration %d: sqlite %s, postgres %s", i+1, lite[i].Name, pg[i].Name)
		}
	}
}
