"""The study file's ``vm`` key of a server: run the study's own install in a qemu guest that
teiten builds and boots on this machine (METHODS S5, 2014: physical host against a guest of the
same cores and memory), ``{vcpus: 2, memory: 2GB}`` (teiten.servers.vm.server)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from teiten.host.cpus import format_list, parse_list
from teiten.spec.base import Bytes, Model, Seconds, size_text
from teiten.spec.place import Place, PlaceModel


class VmOptions(Model):
    """A qemu guest of Debian with the study's install inside, reached over ssh at its address on
    a tap network (or through a loopback port forward of qemu's user-mode network); its vCPU
    threads pinned to CPUs of this machine."""

    vcpus: Annotated[int, Field(ge=1, le=64)] = Field(1, description="the guest's virtual CPUs")
    memory: Bytes = Field(2 << 30, description="the guest's memory (e.g. 2GB)")
    accelerator: Literal["kvm", "tcg"] = Field(
        "kvm", description="kvm: hardware virtualisation (the measurement of a VM); tcg: qemu's "
        "emulation, a functional stand-in that every report calls 'emulated: not a measurement "
        "of a VM'")
    cpus: str | None = Field(
        None, description="the CPUs of this machine that run the vCPUs, one per vCPU in order "
        "(e.g. 2-3); unset: one physical core each, the last ones first")
    boot_timeout: Seconds = Field(300, description="how long the guest may take to boot")
    network: Literal["tap", "user"] = Field(
        "tap", description="tap: a tap device on a bridge in a network namespace teiten makes, "
        "the guest (virtio-net) at a fixed address that clients reach directly; user: qemu's "
        "user-mode network, reached through loopback port forwards, which copies every packet "
        "through qemu and adds to each round trip")

    wal_disk: Bytes = Field(
        4 << 30, description="the size of the guest's WAL disk, its second virtual disk, which "
        "it has when the server sets 'initdb.waldir' (that directory here holds its file, sparse)")

    @field_validator("cpus")
    @classmethod
    def _cpu_list(cls, value: str | None) -> str | None:
        return format_list(parse_list(value)) if value is not None else value

    @model_validator(mode="after")
    def _one_cpu_per_vcpu(self) -> VmOptions:
        if self.cpus is not None and len(parse_list(self.cpus)) != self.vcpus:
            raise ValueError(f"'cpus' names {len(parse_list(self.cpus))} CPUs for {self.vcpus} "
                             "vCPUs: give one CPU per vCPU")
        return self

    def text(self) -> str:
        """The guest as people read it: ``2 vCPUs, 2GB, kvm, tap``."""
        return (f"{self.vcpus} vCPU{'s' if self.vcpus > 1 else ''}, {size_text(self.memory)}, "
                f"{self.accelerator}, {self.network}")


class VmPlace(PlaceModel):
    """A server in a qemu guest on this machine."""

    PLACE: ClassVar[Place] = Place("vm", ("cores", "cpus", "tablespace", "directory", "pgpool",
                                          "snapshot_hook", "limits", "delay"))

    vm: VmOptions | None = Field(
        None, description="run the study's own install in a qemu guest that teiten builds and "
        "boots here (Debian, reached over ssh at its address on a tap network, or through a "
        "loopback port forward of qemu's user-mode network)")

    @model_validator(mode="after")
    def _wal_disk_of_one_node(self) -> VmPlace:
        # ServerSpec's own keys: VmPlace is one of its bases.
        initdb, replicas, pgpool = (getattr(self, k, None) for k in ("initdb", "replicas", "pgpool"))
        if self.vm is not None and getattr(initdb, "waldir", None) and (replicas or pgpool):
            raise ValueError("'initdb.waldir' gives a VM guest's one cluster a WAL disk, and this "
                             "server has several nodes (replicas or pgpool): give one of them")
        return self
