"""A Lightning Trainer fit with the DDP strategy: prints which cluster environment Lightning
detected (TorchElasticEnvironment under torchrun and xlaunch) and the ranks it took."""
import torch

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(32, 1)

    def training_step(self, batch, _):
        (x,) = batch
        return self.net(x).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(640, 32)), batch_size=32)
trainer = pl.Trainer(accelerator="gpu", devices=1, strategy="ddp", max_epochs=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Model(), data)
env = trainer.strategy.cluster_environment
print(f"lightning_fit: {type(env).__name__} global_rank {trainer.global_rank} world_size {trainer.world_size} "
      f"steps {trainer.global_step}", flush=True)
