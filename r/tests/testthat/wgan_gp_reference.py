"""PyTorch's side of test-autograd-wgan-gp.R: the same WGAN-GP training steps, from the same
weights and inputs, on the device and dtype asked for. Returns the losses of each step and the
final weights for the R test to compare with rcuda's. Arrays cross as flat lists in R's
column-major order with their dims (reticulate's own conversion of R arrays needs the NumPy its
build knew)."""
import numpy as np
import torch


def _models():
    generator = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    critic = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.LayerNorm(16),
                                 torch.nn.LeakyReLU(0.2), torch.nn.Linear(16, 1))
    return generator, critic


def _array(values_and_dims):
    values, dims = values_and_dims
    return np.asarray(values, dtype=np.float64).reshape([int(d) for d in dims], order="F")


def train(generator_weights, critic_weights, real, z, eps, device, dtype, lr, lam):
    """Each array is (values, dims) as the R test passes it. generator_weights, critic_weights:
    lists of them in parameter order; real: [steps, n, 4]; z: [steps, n, 2]; eps: [steps, n, 1].
    Returns the losses [steps][3] and each parameter's final values, flat in column-major order."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dt = getattr(torch, dtype)
    generator, critic = _models()
    generator.to(device=device, dtype=dt)
    critic.to(device=device, dtype=dt)
    with torch.no_grad():
        for p, w in zip(generator.parameters(), generator_weights):
            p.copy_(torch.as_tensor(_array(w)))
        for p, w in zip(critic.parameters(), critic_weights):
            p.copy_(torch.as_tensor(_array(w)))
    as_t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=dt, device=device)
    real, z, eps = as_t(_array(real)), as_t(_array(z)), as_t(_array(eps))
    opt_c = torch.optim.Adam(critic.parameters(), lr=lr, betas=(0.5, 0.9))
    opt_g = torch.optim.Adam(generator.parameters(), lr=lr, betas=(0.5, 0.9))
    losses = []
    for s in range(real.shape[0]):
        fake = generator(z[s]).detach()
        mixed = (eps[s] * real[s] + (1 - eps[s]) * fake).requires_grad_(True)
        (g,) = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
        penalty = ((g.pow(2).sum(dim=1).sqrt() - 1).pow(2)).mean()
        loss_c = critic(fake).mean() - critic(real[s]).mean() + lam * penalty
        opt_c.zero_grad()
        loss_c.backward()
        opt_c.step()
        loss_g = -critic(generator(z[s])).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        losses.append([loss_c.item(), penalty.item(), loss_g.item()])
    weights = [p.detach().double().cpu().numpy().flatten(order="F").tolist() for p in
               list(generator.parameters()) + list(critic.parameters())]
    return losses, weights
