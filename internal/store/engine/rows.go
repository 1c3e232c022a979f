package engine

import "database/sql"

// IDs reads the rows of a query of one column of ids (a search's hits,
// the archived rows an index settles), and the query's own error first.
func IDs(rows *sql.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
