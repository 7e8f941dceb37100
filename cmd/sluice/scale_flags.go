package main

import (
	"flag"

	"sluice.dev/sluice/controllers/manager"
)

// scaleFlags are the flags of the manager's API budget and sharding.
type scaleFlags struct {
	qps              float64
	burst            int
	shard, shardName string
}

func (s *scaleFlags) bind(fs *flag.FlagSet) {
	fs.Float64Var(&s.qps, "kube-api-qps", manager.DefaultKubeAPIQPS,
		"Sustained requests per second to the Kubernetes API, shared by every client of the manager (leader election has its own); negative: no client-side limit.")
	fs.IntVar(&s.burst, "kube-api-burst", manager.DefaultKubeAPIBurst, "Requests allowed above --kube-api-qps in a burst.")
	fs.StringVar(&s.shard, "shard", "",
		"Label selector on Canaries: handle only the Canaries it matches, e.g. 'sluice.dev/shard=b' or, for the default shard, 'sluice.dev/shard notin (b,c)'. Empty: every Canary. Needs --shard-name.")
	fs.StringVar(&s.shardName, "shard-name", "",
		"Name of this manager's shard (a DNS label): its leader-election Lease is <leader-election-id>-<shard-name>, and its events and writes carry it.")
}

func (s scaleFlags) apply(o *manager.Options) {
	o.KubeAPIQPS, o.KubeAPIBurst = float32(s.qps), s.burst
	o.Shard, o.ShardName = s.shard, s.shardName
}
