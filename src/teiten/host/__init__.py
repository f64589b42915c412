"""The machine teiten runs on and the hosts it reaches: processes and the accounts they run as
(procs, privileges, client_account), files written without following another account's links
(safefs, paths, trust), CPUs, cgroups and the OS cache (cpus, cgroups, oscache), what the machine
is (fingerprint, system), ssh (remote), network namespaces, the delay proxy and port probes
(netns, netdelay, probe), waiting (waiting), saying how far a long phase is (ticker), the noise
guard's meter of foreign load (guard), and flame graphs folded from perf (flamegraphs). It
imports only the model and the message catalogue."""
