package nemesis

// Pair is a directed link between nodes: From may no longer dial To.
type Pair struct{ From, To int }

// both blocks a and b from each other.
func both(a, b int) []Pair { return []Pair{{a, b}, {b, a}} }

// cutGroups blocks every link between groups a and b, both ways.
func cutGroups(a, b []int) []Pair {
	var out []Pair
	for _, x := range a {
		for _, y := range b {
			out = append(out, both(x, y)...)
		}
	}
	return out
}

// PartitionPairs returns the directed links a partition shape cuts, for n
// nodes, the step's permutation and the current leader (-1 if unknown).
// The shapes are Jepsen's:
//
//	isolate-one        one node cut off from all others
//	isolate-leader     the leader cut off
//	majority-minority  a random minority cut off from the majority
//	majorities-ring    every node sees a majority, no two the same one
//	bridge             two halves joined only through one node
func PartitionPairs(shape string, n int, perm []int, leader int) []Pair {
	switch shape {
	case "isolate-one", "isolate-leader":
		x := perm[0]
		if shape == "isolate-leader" && leader >= 0 {
			x = leader
		}
		return cutGroups([]int{x}, without(perm, x))
	case "majority-minority":
		return cutGroups(perm[:n/2], perm[n/2:])
	case "majorities-ring":
		return ring(n, perm)
	case "bridge":
		h := n / 2
		return cutGroups(perm[:h], perm[h+1:])
	}
	return nil
}

// ring: with five or more nodes each node keeps only its two ring
// neighbours (itself plus two is a majority of five); with three, links are
// kept in one direction round the ring, so each node dials one other and
// hears from the third.
func ring(n int, perm []int) []Pair {
	pos := make(map[int]int, n)
	for i, x := range perm {
		pos[x] = i
	}
	var out []Pair
	for _, a := range perm {
		for _, b := range perm {
			if a == b {
				continue
			}
			d := (pos[b] - pos[a] + n) % n // ring distance from a forward to b
			keep := d == 1 || (n >= 5 && d == n-1)
			if !keep {
				out = append(out, Pair{a, b})
			}
		}
	}
	return out
}
