package v1alpha1

// IsDAG reports whether any step sets dependsOn. Without it, each step
// depends on the one before it.
func (s *WorkflowSpec) IsDAG() bool {
	for i := range s.Steps {
		if len(s.Steps[i].DependsOn) > 0 {
			return true
		}
	}
	return false
}

// Dependencies returns the indexes of the steps step i waits for. Names
// that are not of an earlier step are left out (the CRD refuses them).
func (s *WorkflowSpec) Dependencies(i int) []int {
	if !s.IsDAG() {
		if i == 0 {
			return nil
		}
		return []int{i - 1}
	}
	var deps []int
	for _, name := range s.Steps[i].DependsOn {
		for j := 0; j < i; j++ {
			if s.Steps[j].Name == name {
				deps = append(deps, j)
				break
			}
		}
	}
	return deps
}

// Ancestors returns the steps step i depends on, directly or through
// others: the steps whose outputs it may use.
func (s *WorkflowSpec) Ancestors(i int) map[int]bool {
	seen := map[int]bool{}
	todo := s.Dependencies(i)
	for len(todo) > 0 {
		j := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[j] {
			continue
		}
		seen[j] = true
		todo = append(todo, s.Dependencies(j)...)
	}
	return seen
}

// FinallyDependencies returns the indexes, in spec.finally, of the finally
// steps finally step j waits for. Finally steps run side by side unless
// they name each other: no sequence is implied. Names that are not of an
// earlier finally step are left out (the admission policy refuses them).
func (s *WorkflowSpec) FinallyDependencies(j int) []int {
	var deps []int
	for _, name := range s.Finally[j].DependsOn {
		for k := 0; k < j; k++ {
			if s.Finally[k].Name == name {
				deps = append(deps, k)
				break
			}
		}
	}
	return deps
}

// FinallyAncestors returns the finally steps finally step j depends on,
// directly or through others.
func (s *WorkflowSpec) FinallyAncestors(j int) map[int]bool {
	seen := map[int]bool{}
	todo := s.FinallyDependencies(j)
	for len(todo) > 0 {
		k := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[k] {
			continue
		}
		seen[k] = true
		todo = append(todo, s.FinallyDependencies(k)...)
	}
	return seen
}
